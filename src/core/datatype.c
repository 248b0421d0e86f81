/* Element sizes and names of dmacclDataType_t. */
#include "core.h"

static const struct {
  const char *name;
  size_t size;
} types[dmacclNumTypes] = {
    [dmacclInt8] = {"int8", 1},         [dmacclUint8] = {"uint8", 1},
    [dmacclInt32] = {"int32", 4},       [dmacclUint32] = {"uint32", 4},
    [dmacclInt64] = {"int64", 8},       [dmacclUint64] = {"uint64", 8},
    [dmacclFloat16] = {"half", 2},      [dmacclBfloat16] = {"bfloat16", 2},
    [dmacclFloat32] = {"float", 4},     [dmacclFloat64] = {"double", 8},
    [dmacclFloat8e4m3] = {"f8e4m3", 1}, [dmacclFloat8e5m2] = {"f8e5m2", 1},
};

size_t coreTypeSize(dmacclDataType_t t) {
  return (unsigned)t < dmacclNumTypes ? types[t].size : 0;
}

const char *coreTypeName(dmacclDataType_t t) {
  return (unsigned)t < dmacclNumTypes ? types[t].name : "invalid";
}
