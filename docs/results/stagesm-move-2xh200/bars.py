import json,sys
d=json.load(open(sys.argv[1]))
red={'allreduce','reducescatter'}
mv=[s for s in d['scenarios'] if s['coll'] not in red]
print(len(mv),'movement scenarios')
ncs=['nccl','nccl-prio','nccl-cta8','nccl-ce']
fr={c:[] for c in ncs+['auto']}; above=0; below=0; dec=[]
for s in mv:
    R={r['contender']:r for r in s['rows']}
    for c in fr:
        if c in R: fr[c].append(R[c]['fraction'])
    a=R['auto']
    others=[R[c] for c in ncs if c in R]
    ab=all(a['fraction']>o['fraction'] for o in others); bl=all(a['both_us']<o['both_us'] for o in others)
    above+=ab; below+=bl
    bestn=min(others,key=lambda o:o['both_us'])
    print('%-18s %-10s %5dK frac %.2f (best nccl %.2f) both %.1f ms (nccl best %.1f %s) gemm_slow %.2f (nccl %.2f) %s%s'%(s['name'],s['coll'],s['size']>>10,a['fraction'],max(o['fraction'] for o in others),a['both_us']/1000,bestn['both_us']/1000,bestn['contender'],a['gemm_slowdown'],R['nccl']['gemm_slowdown'],'F' if ab else '-','T' if bl else '-'))
    if 'decode' in s['name']: dec.append((s['name'],a['gemm_slowdown']))
for c in fr: print(c,'mean fraction %.1f%% over %d'%(100*sum(fr[c])/len(fr[c]),len(fr[c])))
print('above every NCCL fraction',above,'below every NCCL time',below)
print('decode gemm slowdowns',dec)
