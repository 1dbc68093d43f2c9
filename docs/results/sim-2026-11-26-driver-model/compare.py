"""Two policy_matrix.sh outputs side by side: ms per steady iteration of none, lru and learned.
usage: python3 compare.py DIR_A DIR_B (columns "old" = DIR_A, "new" = DIR_B)"""
import json,glob,sys
def load(d):
    rows={}
    for f in sorted(glob.glob(d+'/*.json')):
        j=json.load(open(f))
        for r in j['results']:
            rows[(r['workload'],r['ratio'],r['config'])]=r
    return rows
o=load(sys.argv[1]); n=load(sys.argv[2])
print(f"{'workload':22} {'x':>5} | {'none':>9} | {'lru old':>9} {'lru new':>9} | {'lrn old':>9} {'lrn new':>9} | new: lru/none lrn/none | lrn/lru old new | viol")
worse=0
for (w,x,c),r in sorted(o.items()):
    if c!='lru': continue
    g=lambda d,c: d.get((w,x,c),{}).get('seconds_per_iteration') or float('nan')
    no,lo,ln,eo,en=g(n,'none'),g(o,'lru'),g(n,'lru'),g(o,'learned'),g(n,'learned')
    v=sum(n.get((w,x,cc),{}).get('violations',0) for cc in ['lru','learned','none'])
    print(f"{w[:22]:22} {x:5} | {no*1e3:9.1f} | {lo*1e3:9.1f} {ln*1e3:9.1f} | {eo*1e3:9.1f} {en*1e3:9.1f} | {ln/no:6.2f} {en/no:6.2f} | {eo/lo:5.2f} {en/ln:5.2f} | {v}")
