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
import json, os, random, shutil, sqlite3, subprocess, sys

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
p=subprocess.Popen([binary,'serve'],stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,env=env)
def send(m):
    b=json.dumps(m).encode(); p.stdin.write(b'Content-Length: %d\r\n\r\n'%len(b)+b); p.stdin.flush()
def recv():
    n=None
    while True:
        l=p.stdout.readline()
        if l in (b'\r\n',b'\n'): break
        if l.lower().startswith(b'content-length'): n=int(l.split(b':')[1])
    return json.loads(p.stdout.read(n))
def call(i,m,pa):
    send({'jsonrpc':'2.0','id':i,'method':m,'params':pa})
    while True:
        r=recv()
        if r.get('id')==i: return r
call(0,'initialize',{'processId':None,'rootUri':'file://'+kept+'/ws','capabilities':{}})
send({'jsonrpc':'2.0','method':'initialized','params':{}})
skdir=None
for root,ds,fs in os.walk(kept+'/ws'):
    if root.endswith('/'+skill) and 'SKILL.md' in fs: skdir=root
for i,it in enumerate(intents):
    r=call(i+1,'skillmem/toolAfter',{'sessionId':'s%d'%(i//20),'callId':'c%d'%i,'tool':'skill','args':{'name':skill,'intent':it},'output':'Base directory for this skill: %s\n'%skdir})
    print(it,'|',r['result']['mode'],r['result']['noteIds'])
call(99999,'shutdown',None); send({'jsonrpc':'2.0','method':'exit'}); p.wait()
shutil.rmtree(data,ignore_errors=True)
