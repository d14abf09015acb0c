import sys,collections,math
d=collections.defaultdict(dict)
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<4: continue
    d[f[0]].setdefault(int(f[2]),{})[f[1]]=float(f[3])
print("%-52s %9s %9s %7s %7s"%("layer","base_min","new_min","min_rt","med_pair"))
for n,rs in d.items():
    b=min(r['base'] for r in rs.values() if 'base' in r); w=min(r['new'] for r in rs.values() if 'new' in r)
    pr=sorted(r['new']/r['base'] for r in rs.values() if 'base' in r and 'new' in r)
    print("%-52s %9.4f %9.4f %7.3f %7.3f"%(n,b,w,w/b,pr[len(pr)//2]))
