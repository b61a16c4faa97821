import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *
for gpu in ['h100-sxm','h200']:
    sweep, plan = load_feats(f"{os.environ.get('TUNER_RANKING_DATA', '/tmp/tuner_ranking')}/{gpu}_features.csv")
    for sz in [(200,4),(400,6),(400,4),(200,6)]:
        try:
            d,_ = load_dump(f"{os.environ.get('TUNER_RANKING_DATA', '/tmp/tuner_ranking')}/{gpu}_{sz[0]}_{sz[1]}.csv", sweep)
            if len(d) != 15: continue
        except Exception: continue
        a=[];n=[]
        for f in range(5):
            p=d[str(f)]
            for i,s in enumerate(sweep):
                if s['fold']!=f: continue
                e=abs(p[i][0]-s['meas'])/s['meas']; a.append(e)
                if s['meas']<=1.10*s['best']: n.append(e)
        print(gpu, sz, f"MAPE all {100*sum(a)/len(a):.1f}% near {100*sum(n)/len(n):.1f}% (n={len(a)},{len(n)})")
