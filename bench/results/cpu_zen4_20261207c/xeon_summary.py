import collections, statistics, sys
mn=collections.defaultdict(lambda:1e9); md=collections.defaultdict(list)
order=[]
for l in open(sys.argv[1]):
    v,r,name,med,m=l.split()
    if name not in order: order.append(name)
    mn[v,name]=min(mn[v,name],float(m)); md[v,name].append(float(med))
print('%-48s %8s %8s %9s %9s'%('layer','base','new','ratio_min','ratio_med'))
for n in order:
    print('%-48s %8.4f %8.4f %9.3f %9.3f'%(n,mn['base',n],mn['new',n],mn['new',n]/mn['base',n], statistics.median(md['new',n])/statistics.median(md['base',n])))
