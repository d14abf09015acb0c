import math,sys
rows=[l.split() for l in open(sys.argv[1]) if l[0]!='l' and 'x_dims' not in l and 'must' not in l]
r=[float(x[3]) for x in rows]; m=[float(x[4]) for x in rows]
g=lambda v: math.exp(sum(map(math.log,v))/len(v))
print(len(r), 'geomean ratio(min) %.3f ratio(median) %.3f'%(g(r),g(m)), 'range %.3f-%.3f'%(min(r), max(r)))
s=sorted(rows,key=lambda x: float(x[3]))
for x in s[:4]+s[-4:]: print('  ',' '.join(x))
