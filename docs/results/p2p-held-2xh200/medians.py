import json,sys,statistics as st,collections
def load(f):
    d=json.load(open(f)); out=collections.defaultdict(list)
    for r in d['rows']:
        if r['in_place']: continue
        out[(r['coll'],r['size'],r['contender'],r['cycle'])]=r['time_us']
        assert r['wrong']==0
    return out
for call in sys.argv[1:]:
  for mode in ['eager','graph']:
    runs={k:load(f"{call}/{mode}-{k}.json") for k in ['before','after','before2','after2']}
    colls=sorted({k[0] for k in runs['after']})
    for coll in colls:
      print(f"## {call} {mode} {coll}: size, before us, after us, NCCL us (after runs), after/before, after/NCCL (median of per-cycle same-run ratios)")
      sizes=sorted({k[1] for k in runs['after'] if k[0]==coll})
      for s in sizes:
        b=[v for k in ['before','before2'] for (c,sz,ct,cy),v in runs[k].items() if c==coll and sz==s and ct=='auto']
        a=[v for k in ['after','after2'] for (c,sz,ct,cy),v in runs[k].items() if c==coll and sz==s and ct=='auto']
        n=[v for k in ['after','after2'] for (c,sz,ct,cy),v in runs[k].items() if c==coll and sz==s and ct=='nccl']
        rat=[runs[k][(coll,s,'auto',cy)]/runs[k][(coll,s,'nccl',cy)] for k in ['after','after2'] for cy in range(3) if (coll,s,'auto',cy) in runs[k]]
        print(f"{s:>8} {st.median(b):7.2f} {st.median(a):7.2f} {st.median(n):7.2f} {st.median(a)/st.median(b):6.3f} {st.median(rat):6.3f}  (ratios {min(rat):.2f}-{max(rat):.2f})")
