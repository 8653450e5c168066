#!/usr/bin/env python3
"""The same answers from two builds: `skillmem/toolAfter` loads of one skill of a kept store,
through the protocol, printed one line a load (the intent, the mode, the notes shown in order).
Run it with each build and compare the outputs (`cmp`): a change that claims the same ranking
must print the same lines.

    python3 bench/same_answers.py BIN KEPT [SKILL] > out.txt

BIN is a `skillmem` binary; KEPT a `bench recall --keep` setting's folder (its `data.pristine`
is copied, so the kept store is not changed); SKILL defaults to the fill's large skill. The
intents: 150 of the skill's notes' own, 150 of three of their words at random (seeded).
"""
import os, random, shutil, sqlite3, sys

from sidecar import Sidecar

binary=sys.argv[1]; kept=sys.argv[2]
import tempfile
data=tempfile.mkdtemp(prefix='skillmem-same-'); shutil.rmtree(data); shutil.copytree(kept+'/data.pristine',data)
db=sqlite3.connect(data+'/skillmem.db')
skill=sys.argv[3] if len(sys.argv)>3 else 'bench-skill-000'
rows=[r[0] for r in db.execute("select intent from notes where skill=? order by id limit 2000",(skill,))]
words=[w for r in rows for w in r.split()]
random.seed(7)
intents=[random.choice(rows) for _ in range(150)]+[' '.join(random.choice(words) for _ in range(3)) for _ in range(150)]
db.close()
env=dict(os.environ,SKILLMEM_HOME=data,HOME=kept+'/home',SKILLMEM_INDEX_BLOCKING='1')
sc=Sidecar(binary,env)
sc.initialize(kept+'/ws')
skdir=None
for root,ds,fs in os.walk(kept+'/ws'):
    if root.endswith('/'+skill) and 'SKILL.md' in fs: skdir=root
for i,it in enumerate(intents):
    r=sc.call(i+1,'skillmem/toolAfter',{'sessionId':'s%d'%(i//20),'callId':'c%d'%i,'tool':'skill','args':{'name':skill,'intent':it},'output':'Base directory for this skill: %s\n'%skdir})
    print(it,'|',r['result']['mode'],r['result']['noteIds'])
sc.stop(99999)
shutil.rmtree(data,ignore_errors=True)
