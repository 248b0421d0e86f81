import json,sys,collections
for f in sys.argv[1:]:
    d=json.load(open(f)); print("==",f)
    t=collections.OrderedDict(); algos=[]
    for r in d['rows']:
        if r.get('in_place'): continue
        k=(r['coll'],r['size']); a=r['contender']
        if a not in algos: algos.append(a)
        t.setdefault(k,{}).setdefault(a,[]).append((r['time_us'],r.get('wrong',0)))
    print('%-10s %6s '%('coll','KB')+' '.join('%8s'%a for a in algos)+'   best/nccl auto/nccl')
    for (c,s),v in t.items():
        def med(a):
            xs=sorted(x[0] for x in v[a]); return xs[len(xs)//2]
        bad=any(w for a in v for _,w in v[a])
        dm=[a for a in v if a!='nccl']
        best=min(dm,key=med)
        print('%-10s %6d '%(c,s>>10)+' '.join('%8.1f'%med(a) if a in v else '       -' for a in algos)+'   %s %.2f  %.2f%s'%(best,med(best)/med('nccl'),med('auto')/med('nccl') if 'auto' in v else 0,' WRONG' if bad else ''))
