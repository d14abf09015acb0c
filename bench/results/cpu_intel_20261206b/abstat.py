import collections,statistics,sys
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    a=l.split()
    if len(a)==3:
        try: d[a[0]][a[1]].append(float(a[2]))
        except: pass
for k,v in d.items():
    b=statistics.median(v['base']); n=statistics.median(v['main'])
    print("%-26s base %.4f new %.4f  %.3f  (base %s | new %s)"%(k,b,n,n/b,' '.join('%.3f'%x for x in v['base']),' '.join('%.3f'%x for x in v['main'])))
