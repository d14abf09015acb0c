"""prune_sim.py - replays the Find traces of one benchmark log (CONVFIND_FIND_TRACE=1
lines of bench_convfind) under a rule that would skip a candidate engine once it had been
tried in k earlier Finds of a similar problem (1x1 or not, channels aligned to 8 or not,
the engine's layout and number) and never came within r x of that Find's winner.  Prints,
per rule, the candidate time the traces spent, what the rule would have saved, and how
many Finds would have chosen a slower configuration (and how much slower, by the traced
medians).  An offline estimate from one run's traces, not a measurement.

    python3 prune_sim.py <bench_convfind log with find: lines>
"""
import re, sys, glob, collections
def finds(path):
    cur=[]; out=[]
    for line in open(path):
        if line.startswith('find: candidate'):
            f=line.split()
            d=dict(kv.split('=',1) for kv in f[4:])
            cur.append(dict(name=f[2], status=f[3], cost=float(d['prepare_ms'])+float(d['check_ms'])+float(d['timing_ms']),
                            med=float(d['median_ms']), reps=int(d['repeats'])))
        elif line.startswith('find: final'):
            pass
        elif line.startswith('find: done'):
            out.append([cur,None]); cur=[]
        elif line.startswith('layer'):
            f=line.split(); out[-1][1]=(f[1],f[-1])
    return out
def engine(name):
    m=re.match(r'cuda\.cudnn:(\w+)(\+ep)?(\+split)?:e(\d+)',name)
    if not m: return name
    return name.split(':')[1]+':e'+re.search(r':e(\d+)',name).group(1)
def pattern(layer, cand):
    k1 = '_1x1_' in layer
    c = re.search(r'_c(\d+)_',layer); c=int(c.group(1)) if c else 3
    return (k1, c%8==0, engine(cand))
def sim(paths, k, r):
    tot=saved=0; loss=[]; changed=0
    for p in paths:
        hist=collections.defaultdict(lambda:[0,0])  # tries, close
        for cands,(layer,chosen) in finds(p):
            ok=[c for c in cands if c['status'] in ('ok','abandoned') and c['reps']>0]
            win=min((c['med'] for c in cands if c['status']=='ok'), default=None)
            kept=[]
            for c in cands:
                key=pattern(layer,c['name'])
                h=hist[key]
                tot+=c['cost']
                if h[0]>=k and h[1]==0:
                    saved+=c['cost']
                else:
                    kept.append(c)
            newwin=min((c['med'] for c in kept if c['status']=='ok'), default=None)
            if win and newwin and newwin>win*1.0001:
                changed+=1; loss.append(newwin/win)
            # learn from all tried (those kept) this find
            if win:
                for c in kept:
                    if c['reps']>0 and c['status'] in ('ok','abandoned'):
                        key=pattern(layer,c['name']); h=hist[key]; h[0]+=1
                        if c['med']<=r*win: h[1]+=1
    import math
    print(f"k={k} r={r}: cost {tot/1e3:.2f}s saved {saved/1e3:.2f}s ({100*saved/tot:.0f}%), changed {changed}, worst {max(loss) if loss else 1:.2f}, losses {sorted(round(x,2) for x in loss)[-6:]}")
paths=sys.argv[1:]
for k in (2,3,4):
    for r in (1.3,1.6,2.0):
        sim(paths,k,r)
