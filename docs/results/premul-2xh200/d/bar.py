# Issue 22's eager bar from eager-1..5.json: per run the median over the
# sweeps of dmaccl's time / NCCL's (same sweep), then the runs' median;
# outliers = a sweep over 2x its row's median in its run (both libraries).
# usage: python3 bar.py DIR
import json,statistics as st,sys,collections,glob,os
d=sys.argv[1]
def rows(p): return json.load(open(p))['rows']
# per run: per (coll,size,contender) list of sweep times
out=collections.defaultdict(dict)
outl=[]
for i in range(1,6):
    p=f'{d}/eager-{i}.json'
    if not os.path.exists(p): continue
    t=collections.defaultdict(list)
    for x in rows(p):
        if x['in_place']: continue
        t[(x['coll'],x['size'],x['contender'])].append((x['cycle'],x['time_us']))
    for k,v in t.items():
        med=st.median(y for _,y in v)
        for c,y in v:
            if y>2*med: outl.append((i,k,c,round(y,2),round(med,2)))
    for (c,s,who),v in t.items():
        if who!='auto': continue
        nv=dict(t[(c,s,'nccl')])
        ratios=[y/nv[cy] for cy,y in v if cy in nv]
        out[(c,s)][i]=(st.median(ratios), st.median(y for _,y in v), st.median(nv.values()))
sizes=sorted({s for _,s in out})
for c in ['allgather','alltoall','allreduce']:
    print(c)
    for s in sizes:
        if (c,s) not in out: continue
        runs=out[(c,s)]
        meds=[runs[i][0] for i in sorted(runs)]
        print(f'  {s:>8}: runs '+' '.join(f'{m:.2f}' for m in meds)+f'  median {st.median(meds):.2f}  ({st.median(runs[i][1] for i in runs):.2f} / {st.median(runs[i][2] for i in runs):.2f} us)')
print('outliers (run, row, cycle, us, median):')
for o in outl: print(' ',o)
