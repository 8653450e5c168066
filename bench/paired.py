#!/usr/bin/env python3
"""Paired loads: BIN... each serve a copy of KEPT's pristine store; every round sends the same
toolAfter (the large skill, a random 2-4 word intent) to each in turn (rotating who goes first),
timing each round trip and each server's CPU. Drift of the machine hits both alike.
    python3 bench/paired.py KEPT ROUNDS BIN...

KEPT is a `bench recall --keep` setting's folder (its `data.pristine` is copied for each BIN);
each server is warmed by 300 loads first. Prints each BIN's round-trip p50/p90/p99 at this
client and its server's CPU a load (user and system, /proc).
"""
import os, random, shutil, sqlite3, sys, tempfile, time

from sidecar import Sidecar
kept=sys.argv[1]; rounds=int(sys.argv[2]); bins=sys.argv[3:]
skill='bench-skill-000'
db=sqlite3.connect(kept+'/data.pristine/skillmem.db')
rows=[r[0] for r in db.execute("select intent from notes where skill=? order by id limit 3000",(skill,))]
db.close()
words=sorted(set(w for r in rows for w in r.split()))
random.seed(11)
skdir=None
for root,ds,fs in os.walk(kept+'/ws'):
    if root.endswith('/'+skill) and 'SKILL.md' in fs: skdir=root
class S(Sidecar):
    def __init__(s,b):
        s.data=tempfile.mkdtemp(prefix='skillmem-pair-'); shutil.rmtree(s.data); shutil.copytree(kept+'/data.pristine',s.data)
        Sidecar.__init__(s,b,dict(os.environ,SKILLMEM_HOME=s.data,HOME=kept+'/home'))
        s.i=0; s.lat=[]; s.name=os.path.basename(b)
    def ask(s,m,pa):
        s.i+=1
        return s.call(s.i,m,pa)
    def cpu(s):
        f=open('/proc/%d/stat'%s.p.pid).read().rsplit(')',1)[1].split()
        return (int(f[11])+int(f[12]))/os.sysconf('SC_CLK_TCK')
    def load(s,n,it):
        return s.ask('skillmem/toolAfter',{'sessionId':'s%d'%(n//20),'callId':'c%d'%n,'tool':'skill','args':{'name':skill,'intent':it},'output':'Base directory for this skill: %s\n'%skdir})
ss=[S(b) for b in bins]
for s in ss:
    s.initialize(kept+'/ws')
def intent(): return ' '.join(random.choice(words) for _ in range(random.randint(2,4)))
for n in range(300):
    it=intent()
    for s in ss: s.load(n,it)
c0=[s.cpu() for s in ss]
for n in range(rounds):
    it=intent()
    order=ss[n%len(ss):]+ss[:n%len(ss)]
    for s in order:
        t=time.perf_counter(); s.load(1000+n,it); s.lat.append(1000*(time.perf_counter()-t))
c1=[s.cpu() for s in ss]
for s,a,b in zip(ss,c0,c1):
    l=sorted(s.lat)
    print('%-12s p50 %.3f ms p90 %.3f p99 %.3f cpu/load %.3f ms'%(s.name,l[len(l)//2],l[int(len(l)*.9)],l[int(len(l)*.99)],1000*(b-a)/rounds))
for s in ss:
    s.stop(s.i+1); shutil.rmtree(s.data,ignore_errors=True)
