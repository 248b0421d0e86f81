/* JSON output helpers shared by the tools (dmaccl-perf -J, dmaccl-c3 -J). */
#ifndef DMACCL_TOOLS_JSON_H_
#define DMACCL_TOOLS_JSON_H_

#include <stdio.h>

/* Writes s as a JSON string: quotes, backslashes and control characters escaped. */
static inline void jsonString(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

#endif
