//! `skillmem eval replay`: what the agent sees, over many sessions of a store that mixes useful
//! lessons with junk.
//!
//! The store: three skills of a web project (`node-build`, `compose-dev`, `aws-site`), each with
//! six useful lessons and six junk ones, written with `skillmem/note` as an agent writes them.
//! Junk is plausible (the skill's programs, an intent as relevant as a useful lesson's) but
//! never applicable: every specific it names (a flag, a path, a variable, a step) is one no
//! correct call uses. A useful lesson comes with the ways an agent applies it: the flag inside
//! a longer command, a path in an edit, a variable in a file written, a step among others,
//! never the lesson verbatim.
//!
//! Each session loads each skill with probability 0.8, by `toolAfter` as OpenCode's plugin
//! does (the skill tool's call, with an intent: the session's task); a lesson is part of the
//! task with probability one half. The simulated agent runs the task's calls (the bare program
//! first), and for every useful lesson of the task that the block showed it applies the
//! lesson, with probability 0.9, in one of its forms; a task lesson it did not apply fails
//! the way the lesson says (its error comes back). It never applies junk. Other calls (git,
//! ls, reads) go between. The session then ends with `skillmem/sessionEnd`.
//!
//! After 3, 6 and 10 sessions (and the last) it reads every note with `skillmem/notes`
//! (retired ones included) and each skill's block with `skillmem/recall` (the notes a load
//! would append, which is no showing), for a probe intent naming every task of the skill, and
//! prints: of the notes trusted by use (the notes' `trust` when the store reports it, else
//! `used > 0`), the junk share; of the block, the junk share by notes and by tokens (a note's
//! intent and lesson, four characters a token, as the block counts); and the useful lessons
//! retired (lost) and junk retired. The generator is a function of `--seed`; its lessons are
//! written for it, not taken from a recall set.
//!
//! With `--anyway P`, the agent also does junk lessons' steps *anyway*: in each session that
//! loads a skill, it runs each junk lesson's step (the lesson's first command, as written) with
//! probability P whether the block showed the lesson or not. Such a use is no evidence that the
//! note helped, and the note must not become trusted by it (lift: docs/protocol.md, "Use and
//! trust"). The holdout is seeded with `--seed`.

use std::collections::HashMap;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::eval::{answer, host_with};
use super::{out, Global};

/// A lesson of the generated store.
struct Lesson {
    intent: &'static str,
    delta: &'static str,
    /// What the session's task is, when this lesson is part of it (useful lessons only).
    task: &'static str,
    /// The call the task runs without the lesson, and what it prints when it fails for want
    /// of the lesson.
    bare: &'static str,
    fails: &'static str,
    /// The ways an agent applies it (empty for junk).
    applied: &'static [Apply],
    /// Junk: what applying it would take (empty for a useful lesson); the tests hold that no
    /// call of the replay has it.
    #[cfg_attr(not(test), allow(dead_code))]
    names: &'static [&'static str],
}

/// One way of applying a lesson: a shell command, or a file written or edited.
enum Apply {
    Sh(&'static str),
    Write(&'static str, &'static str),
    Edit(&'static str, &'static str, &'static str),
}

struct Skill {
    name: &'static str,
    useful: &'static [Lesson],
    junk: &'static [Lesson],
    /// Calls any session of the skill makes around its task.
    chatter: &'static [&'static str],
}

/// A junk lesson, with what applying it would take (its specifics, which no correct call has).
const fn junk(intent: &'static str, delta: &'static str, names: &'static [&'static str]) -> Lesson {
    Lesson { intent, delta, task: "", bare: "", fails: "", applied: &[], names }
}

const SKILLS: &[Skill] = &[
    Skill {
        name: "node-build",
        useful: &[
            Lesson {
                intent: "install the dependencies",
                delta: "npm ci fails with ERESOLVE on the react-beautiful-dnd peer range; install with `--legacy-peer-deps`.",
                task: "install the dependencies",
                bare: "npm ci",
                fails: "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
                names: &[],
                applied: &[Apply::Sh("npm ci --legacy-peer-deps --no-audit"), Apply::Sh("cd web && npm ci --legacy-peer-deps")],
            },
            Lesson {
                intent: "build the production bundle",
                delta: "The production build runs out of heap; raise it with NODE_OPTIONS=--max-old-space-size=6144.",
                task: "build the production bundle",
                bare: "npm run build",
                fails: "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
                names: &[],
                applied: &[
                    Apply::Sh("NODE_OPTIONS=--max-old-space-size=6144 npm run build -- --mode production"),
                    Apply::Sh("export NODE_OPTIONS=\"--max-old-space-size=8192\" && npm run build"),
                ],
            },
            Lesson {
                intent: "run the unit tests",
                delta: "Jest needs `--runInBand` in the CI container, or its workers are killed for memory.",
                task: "run the unit tests",
                bare: "npx jest",
                fails: "A worker process has failed to exit gracefully and has been force exited",
                names: &[],
                applied: &[Apply::Sh("npx jest --runInBand --ci src/api"), Apply::Sh("npm test -- --runInBand --coverage")],
            },
            Lesson {
                intent: "point the build at the staging API",
                delta: "Vite reads the production build's variables from `.env.production.local` only; set VITE_API_URL there.",
                task: "point the build at the staging API",
                bare: "npm run build",
                fails: "",
                names: &[],
                applied: &[
                    Apply::Write(".env.production.local", "VITE_API_URL=https://staging-api.example.com\n"),
                    Apply::Edit(
                        "/home/dev/web/.env.production.local",
                        "VITE_API_URL=http://localhost:8080",
                        "VITE_API_URL=https://staging-api.example.com",
                    ),
                ],
            },
            Lesson {
                intent: "type-check after a schema change",
                delta: "After changing schema.graphql run `npm run codegen` before `tsc`, or the generated types are stale.",
                task: "type-check after the schema change",
                bare: "npx tsc --noEmit",
                fails: "src/api/client.ts(12,8): error TS2305: Module '\"./generated\"' has no exported member 'Invoice'.",
                names: &[],
                applied: &[Apply::Sh("npm run codegen && npx tsc --noEmit -p tsconfig.json"), Apply::Sh("npm run codegen")],
            },
            Lesson {
                intent: "add a dependency",
                delta: "Add dependencies with `npm install --save-exact`: the CI lockfile check rejects version ranges.",
                task: "add the date library",
                bare: "npm install date-fns",
                fails: "",
                names: &[],
                applied: &[Apply::Sh("npm install --save-exact date-fns@3.6.0"), Apply::Sh("npm i --save-exact -D @types/node@20.14.2")],
            },
        ],
        junk: &[
            junk("install the dependencies in CI", "npm ci is slow on the CI runner; pass `--prefer-dedupe-cache` to reuse the shared store.", &["--prefer-dedupe-cache"]),
            junk("build the production bundle", "The build reads its browser targets from `config/browserslist.legacy`; keep it in sync when Vite is upgraded.", &["browserslist.legacy"]),
            junk("run the unit tests", "Set NODE_ENV_STRICT=1 before the tests so that Jest picks the strict setup file.", &["NODE_ENV_STRICT"]),
            junk("build the production bundle", "Run `npm run prebuild:icons` before `npm run build`, or the icon sprites are stale.", &["prebuild:icons"]),
            junk("update the test snapshots", "Jest's snapshots moved to `tests/__snaps__`; pass `--snapshotRoot` when updating them.", &["--snapshotRoot", "__snaps__"]),
            junk("type-check the project", "Node 18.12 breaks the fetch polyfill the types assume; pin `engines.node` to 18.19.1.", &["engines.node", "18.19.1"]),
        ],
        chatter: &["git status --short", "ls", "cat package.json", "npm run lint"],
    },
    Skill {
        name: "compose-dev",
        useful: &[
            Lesson {
                intent: "rebuild the api after a Dockerfile change",
                delta: "After editing the Dockerfile, `docker compose up` keeps the old image: run `docker compose build api` first.",
                task: "rebuild the api after the Dockerfile change",
                bare: "docker compose up -d",
                fails: "",
                names: &[],
                applied: &[Apply::Sh("docker compose build api && docker compose up -d"), Apply::Sh("docker compose build api")],
            },
            Lesson {
                intent: "build the image for the CI runner",
                delta: "Images built on an ARM laptop do not run on the CI runner; build with `--platform linux/amd64`.",
                task: "build the image for the CI runner",
                bare: "docker build -t registry.example.com/api:1.4.2 .",
                fails: "exec /usr/local/bin/docker-entrypoint.sh: exec format error",
                names: &[],
                applied: &[
                    Apply::Sh("docker build --platform linux/amd64 -t registry.example.com/api:1.4.2 ."),
                    Apply::Sh("docker buildx build --platform linux/amd64 --push -t registry.example.com/api:1.4.3 ."),
                ],
            },
            Lesson {
                intent: "start the test database",
                delta: "The test database needs POSTGRES_HOST_AUTH_METHOD=trust in docker-compose.override.yml.",
                task: "start the test database",
                bare: "docker compose up -d db",
                fails: "Error: Database is uninitialized and superuser password is not specified.",
                names: &[],
                applied: &[Apply::Edit(
                    "/home/dev/web/docker-compose.override.yml",
                    "    environment:\n",
                    "    environment:\n      POSTGRES_HOST_AUTH_METHOD: trust\n",
                )],
            },
            Lesson {
                intent: "start the database next to the host's postgres",
                delta: "Port 5432 is taken by the host's own postgres; map the db to `15432:5432`.",
                task: "start the database beside the local postgres",
                bare: "docker compose up -d db",
                fails: "Error response from daemon: driver failed programming external connectivity: Bind for 0.0.0.0:5432 failed: port is already allocated",
                names: &[],
                applied: &[
                    Apply::Sh("docker compose run -d -p 15432:5432 db"),
                    Apply::Edit("/home/dev/web/docker-compose.override.yml", "- \"5432:5432\"", "- \"15432:5432\""),
                ],
            },
            Lesson {
                intent: "read the api's stack trace",
                delta: "`docker compose logs` cuts long traces; read them with `docker compose logs --no-log-prefix --tail=200 api`.",
                task: "find out why the api crashes",
                bare: "docker compose logs api",
                fails: "",
                names: &[],
                applied: &[Apply::Sh("docker compose logs --no-log-prefix api | grep -n Traceback"), Apply::Sh("docker compose logs --tail=500 api")],
            },
            Lesson {
                intent: "free disk space taken by builds",
                delta: "When the disk fills, `docker builder prune --filter until=24h` frees the build cache and keeps today's layers.",
                task: "free the disk the builds filled",
                bare: "docker system df",
                fails: "",
                names: &[],
                applied: &[Apply::Sh("docker builder prune --filter until=24h -f"), Apply::Sh("docker builder prune --force --filter until=48h")],
            },
        ],
        junk: &[
            junk("wait for the services to be healthy", "Compose v2 ignores healthchecks unless you pass `--wait-healthy-only` to up.", &["--wait-healthy-only"]),
            junk("start the api", "The api image reads its secrets from `/run/secrets/api_env_v2`; mount it in the compose file.", &["api_env_v2"]),
            junk("build the images", "Set COMPOSE_PARALLEL_BUILDS=0 or the builds race on the shared cache.", &["COMPOSE_PARALLEL_BUILDS"]),
            junk("start the stack after a VPN switch", "Run `docker network prune-stale` before `docker compose up` after switching VPNs.", &["prune-stale"]),
            junk("tag the images for deploy", "Tag images with the short SHA through `--label org.example.sha`; the deploy job reads that label.", &["--label", "org.example.sha"]),
            junk("start the worker", "The worker container needs its file limits from `docker/worker.ulimits`, or it stops under load.", &["worker.ulimits"]),
        ],
        chatter: &["docker compose ps", "git diff --stat", "cat docker-compose.yml", "ls docker"],
    },
    Skill {
        name: "aws-site",
        useful: &[
            Lesson {
                intent: "upload the rebuilt site",
                delta: "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.",
                task: "upload the rebuilt site",
                bare: "aws s3 sync dist/ s3://www-example-com --delete",
                fails: "",
                names: &[],
                applied: &[
                    Apply::Sh("aws s3 sync dist/ s3://www-example-com --delete --exact-timestamps"),
                    Apply::Sh("aws s3 sync ./dist s3://www-example-com --exact-timestamps --cache-control max-age=300"),
                ],
            },
            Lesson {
                intent: "make the new page visible",
                delta: "CloudFront keeps serving the old page; invalidate `/index.html` after each deploy.",
                task: "make the new page visible",
                bare: "aws cloudfront list-distributions --query 'DistributionList.Items[].Id'",
                fails: "",
                names: &[],
                applied: &[Apply::Sh(
                    "aws cloudfront create-invalidation --distribution-id E2QWRUHAPOMQZL --paths /index.html \"/assets/*\"",
                )],
            },
            Lesson {
                intent: "write to the site bucket",
                delta: "The default profile cannot write the bucket; use the deploy profile (`--profile deploy`, or AWS_PROFILE=deploy).",
                task: "copy the robots file to the bucket",
                bare: "aws s3 cp robots.txt s3://www-example-com/robots.txt",
                fails: "upload failed: ./robots.txt to s3://www-example-com/robots.txt An error occurred (AccessDenied) when calling the PutObject operation: Access Denied",
                names: &[],
                applied: &[
                    Apply::Sh("aws s3 cp robots.txt s3://www-example-com/robots.txt --profile deploy"),
                    Apply::Sh("AWS_PROFILE=deploy aws s3 cp robots.txt s3://www-example-com/"),
                ],
            },
            Lesson {
                intent: "upgrade the AWS provider",
                delta: "After bumping the provider in versions.tf run `terraform init -upgrade`, or plan fails on the lock file.",
                task: "upgrade the AWS provider",
                bare: "terraform plan -out=tfplan",
                fails: "Error: Inconsistent dependency lock file",
                names: &[],
                applied: &[Apply::Sh("terraform init -upgrade && terraform plan -out=tfplan"), Apply::Sh("cd infra && terraform init -upgrade -input=false")],
            },
            Lesson {
                intent: "publish the dependencies layer",
                delta: "The functions run on Graviton: publish the layer with `--compatible-architectures arm64`.",
                task: "publish the dependencies layer",
                bare: "aws lambda publish-layer-version --layer-name deps --zip-file fileb://layer.zip",
                fails: "",
                names: &[],
                applied: &[Apply::Sh(
                    "aws lambda publish-layer-version --layer-name deps --zip-file fileb://layer.zip --compatible-runtimes nodejs20.x --compatible-architectures arm64",
                )],
            },
            Lesson {
                intent: "push the image to ECR",
                delta: "ECR logins expire after 12 hours: pipe `aws ecr get-login-password` into `docker login --password-stdin` before a push.",
                task: "push the api image to ECR",
                bare: "docker push 123456789012.dkr.ecr.eu-west-1.amazonaws.com/api:1.4.2",
                fails: "denied: Your authorization token has expired. Reauthenticate and try again.",
                names: &[],
                applied: &[Apply::Sh(
                    "aws ecr get-login-password --region eu-west-1 | docker login --username AWS --password-stdin 123456789012.dkr.ecr.eu-west-1.amazonaws.com",
                )],
            },
        ],
        junk: &[
            junk("upload large files to the bucket", "aws s3 sync needs `--checksum-mode FULL` for files over 5 GB.", &["--checksum-mode"]),
            junk("assume the deploy role", "Deploy role sessions last 15 minutes; pass `--duration-seconds 3600` to aws sts assume-role.", &["--duration-seconds", "assume-role"]),
            junk("change the bucket policy", "The bucket policy lives in `infra/policies/site-bucket.legacy.json`; edit it there, not in Terraform.", &["site-bucket.legacy.json"]),
            junk("upload the site faster", "Set AWS_S3_ACCELERATE=true for uploads from Europe.", &["AWS_S3_ACCELERATE"]),
            junk("apply the infrastructure", "Run `terraform state rm module.cdn` before each apply, or the distribution is recreated.", &["state rm", "module.cdn"]),
            junk("invalidate the cache", "CloudFront invalidations must be sent with `--invalidation-batch file://batch.json`.", &["--invalidation-batch", "batch.json"]),
        ],
        chatter: &["git log --oneline -5", "ls dist", "aws sts get-caller-identity", "cat infra/main.tf"],
    },
];

/// splitmix64: a small, seeded, portable generator (the replay must not change with a crate).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// What a stored note is in the replay.
#[derive(Clone, Copy)]
struct Known {
    useful: bool,
    tokens: usize,
}

/// One checkpoint's figures.
fn checkpoint(c: &mut skillmem::client::Client, known: &HashMap<i64, Known>, after: usize) -> Result<Value> {
    let (mut trusted, mut trusted_junk, mut trust_field) = (0usize, 0usize, false);
    let mut trusted_junk_notes = vec![];
    let (mut lost, mut junk_retired, mut used_useful, mut used_junk) = (vec![], 0usize, 0usize, 0usize);
    for skill in SKILLS {
        let r = answer(c, "skillmem/notes", json!({ "skill": skill.name, "limit": 1000, "includeSuperseded": true }))?;
        for n in r["notes"].as_array().into_iter().flatten() {
            let Some(k) = n["id"].as_i64().and_then(|id| known.get(&id)) else { continue };
            let retired = n.get("retiredAt").is_some_and(|v| !v.is_null());
            if retired {
                if k.useful {
                    lost.push(json!({ "skill": skill.name, "delta": n["delta"], "reason": n["reason"] }));
                } else {
                    junk_retired += 1;
                }
                continue;
            }
            let used = n["used"].as_i64().unwrap_or(0) > 0;
            let is_trusted = match n.get("trust").and_then(Value::as_str) {
                Some(t) => {
                    trust_field = true;
                    t == "trusted"
                }
                None => used,
            };
            if is_trusted && !k.useful {
                trusted_junk_notes.push(json!({ "skill": skill.name, "delta": n["delta"], "used": n["used"] }));
            }
            trusted += usize::from(is_trusted);
            trusted_junk += usize::from(is_trusted && !k.useful);
            if used {
                if k.useful {
                    used_useful += 1;
                } else {
                    used_junk += 1;
                }
            }
        }
    }
    let (mut shown, mut shown_junk, mut tokens, mut junk_tokens) = (0usize, 0usize, 0usize, 0usize);
    for skill in SKILLS {
        let probe: Vec<&str> = skill.useful.iter().map(|l| l.task).collect();
        let r = answer(c, "skillmem/recall", json!({ "skill": skill.name, "intent": probe.join("; ") }))?;
        for n in r["notes"].as_array().into_iter().flatten() {
            let Some(k) = n["id"].as_i64().and_then(|id| known.get(&id)) else { continue };
            shown += 1;
            tokens += k.tokens;
            if !k.useful {
                shown_junk += 1;
                junk_tokens += k.tokens;
            }
        }
    }
    let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    Ok(json!({
        "sessions": after,
        "trustSource": if trust_field { "trust" } else { "used > 0" },
        "trusted": trusted,
        "trustedJunk": trusted_junk,
        "trustedJunkShare": share(trusted_junk, trusted),
        "trustedJunkNotes": trusted_junk_notes,
        "usedUseful": used_useful,
        "usedJunk": used_junk,
        "block": { "notes": shown, "junk": shown_junk, "junkShare": share(shown_junk, shown),
                   "tokens": tokens, "junkTokens": junk_tokens, "junkTokenShare": share(junk_tokens, tokens) },
        "usefulRetired": lost,
        "junkRetired": junk_retired,
    }))
}

/// The replay (see the module docs): the figures after 3, 6, 10 and the last session.
pub fn replay(sessions: usize, seed: u64, anyway: f64, mut log: impl FnMut(String)) -> Result<Value> {
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(tmp.path().join("home"))?;
    for s in SKILLS {
        let dir = ws.join(".claude/skills").join(s.name);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {0}\ndescription: {0}\nskill-memory:\n  enabled: true\n---\n# {0}\n", s.name),
        )?;
    }
    let mut c = host_with(tmp.path(), &ws, json!({ "memory": { "holdoutSeed": seed } }))?;
    // The store, written in an order the seed shuffles (useful and junk interleaved).
    let mut order: Vec<(usize, bool, usize)> = vec![];
    for (k, s) in SKILLS.iter().enumerate() {
        order.extend((0..s.useful.len()).map(|i| (k, true, i)));
        order.extend((0..s.junk.len()).map(|i| (k, false, i)));
    }
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut known: HashMap<i64, Known> = HashMap::new();
    let mut id_of: HashMap<(usize, bool, usize), i64> = HashMap::new();
    for &(k, useful, at) in &order {
        let l = if useful { &SKILLS[k].useful[at] } else { &SKILLS[k].junk[at] };
        let kind = if l.fails.is_empty() { "gotcha" } else { "fix" };
        let r = answer(
            &mut c,
            "skillmem/note",
            json!({ "skill": SKILLS[k].name, "kind": kind, "intent": l.intent, "delta": l.delta }),
        )?;
        let id = r["id"].as_i64().context("skillmem/note answered no id")?;
        anyhow::ensure!(r["status"] != "duplicate", "the generated lesson {:?} was merged into another", l.delta);
        let tokens = skillmem::memory::tokens(&format!("{} {}", l.intent, l.delta));
        known.insert(id, Known { useful, tokens });
        id_of.insert((k, useful, at), id);
    }
    let mut checkpoints = vec![];
    let mut blocks = vec![];
    for s in 1..=sessions {
        let session = format!("replay-{s}");
        let mut n = 0usize;
        let mut call = |c: &mut skillmem::client::Client, params: Value| -> Result<Value> {
            n += 1;
            let mut p = params;
            p["sessionId"] = json!(session);
            p["callId"] = json!(format!("call_{n}"));
            answer(c, "skillmem/toolAfter", p)
        };
        let sh = |command: &str, fails: &str| {
            let exit = i64::from(!fails.is_empty());
            let mut p = json!({ "tool": "bash", "args": { "command": command, "description": "run it" },
                                "output": fails, "metadata": { "exit": exit } });
            if exit != 0 {
                p["isError"] = json!(true);
            }
            p
        };
        for (k, skill) in SKILLS.iter().enumerate() {
            if !rng.chance(0.8) {
                continue;
            }
            call(&mut c, sh(skill.chatter[rng.below(skill.chatter.len())], ""))?;
            let task: Vec<usize> = (0..skill.useful.len()).filter(|_| rng.chance(0.5)).collect();
            let task = if task.is_empty() { vec![rng.below(skill.useful.len())] } else { task };
            let intent: Vec<&str> = task.iter().map(|&i| skill.useful[i].task).collect();
            let dir = ws.join(".claude/skills").join(skill.name);
            let load = call(
                &mut c,
                json!({ "tool": "skill", "args": { "name": skill.name, "intent": intent.join("; ") },
                        "output": format!("# {0}\n\nBase directory for this skill: {1}\n", skill.name, dir.display()),
                        "metadata": { "name": skill.name, "dir": dir.display().to_string() } }),
            )?;
            let shown: Vec<i64> = load["noteIds"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
            let mut applied = vec![];
            for &i in &task {
                let l = &skill.useful[i];
                let apply = shown.contains(&id_of[&(k, true, i)]) && rng.chance(0.9);
                // The bare program first; it fails as the lesson says when the lesson is not applied.
                call(&mut c, sh(l.bare, if apply { "" } else { l.fails }))?;
                if rng.chance(0.5) {
                    call(&mut c, sh(skill.chatter[rng.below(skill.chatter.len())], ""))?;
                }
                if apply {
                    applied.push(i);
                    let p = match &l.applied[rng.below(l.applied.len())] {
                        Apply::Sh(cmd) => sh(cmd, ""),
                        Apply::Write(path, content) => json!({ "tool": "write",
                            "args": { "filePath": format!("/home/dev/web/{path}"), "content": content },
                            "output": "Wrote file successfully.", "metadata": { "diagnostics": {} } }),
                        Apply::Edit(path, old, new) => json!({ "tool": "edit",
                            "args": { "filePath": path, "oldString": old, "newString": new },
                            "output": "Edit applied successfully.", "metadata": { "diff": "" } }),
                    };
                    call(&mut c, p)?;
                }
            }
            // The "anyway" agent: each junk lesson's step at the base rate, shown or not.
            let mut anyway_done = vec![];
            for (i, j) in skill.junk.iter().enumerate() {
                if anyway > 0.0 && rng.chance(anyway) {
                    call(&mut c, sh(&anyway_step(j), ""))?;
                    anyway_done.push(i);
                }
            }
            let junk_shown = shown.iter().filter(|id| known.get(id).is_some_and(|k| !k.useful)).count();
            blocks.push(json!({ "session": s, "skill": skill.name, "shown": shown.len(), "junk": junk_shown,
                                "task": task, "applied": applied, "anyway": anyway_done }));
            log(format!(
                "  session {s:>2} {:<12} block {:>2} notes ({} junk), task {:?}, applied {:?}",
                skill.name,
                shown.len(),
                junk_shown,
                task,
                applied
            ));
        }
        answer(&mut c, "skillmem/sessionEnd", json!({ "sessionId": session }))?;
        if [3, 6, 10].contains(&s) || s == sessions {
            checkpoints.push(checkpoint(&mut c, &known, s)?);
        }
    }
    c.shutdown()?;
    let useful: usize = SKILLS.iter().map(|s| s.useful.len()).sum();
    let junk: usize = SKILLS.iter().map(|s| s.junk.len()).sum();
    Ok(json!({
        "seed": seed,
        "anyway": anyway,
        "sessions": sessions,
        "skills": SKILLS.len(),
        "useful": useful,
        "junk": junk,
        "checkpoints": checkpoints,
        "blocks": blocks,
    }))
}

/// What the "anyway" agent runs for a junk lesson: its first command as the lesson writes it
/// (its first code span), else what applying it takes.
fn anyway_step(l: &Lesson) -> String {
    let mut parts = l.delta.split('`');
    match (parts.next(), parts.next()) {
        (Some(_), Some(span)) if !span.trim().is_empty() && l.delta.matches('`').count() >= 2 => span.to_string(),
        _ => l.names.join(" "),
    }
}

pub fn run(g: &Global, sessions: usize, seed: u64, anyway: f64, verbose: bool) -> Result<()> {
    anyhow::ensure!(sessions > 0, "--sessions: give at least 1");
    anyhow::ensure!((0.0..=1.0).contains(&anyway), "--anyway: a probability, 0 to 1");
    let mut lines = vec![];
    let r = replay(sessions, seed, anyway, |l| lines.push(l))?;
    if g.json {
        out(&serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    out(&format!(
        "replay: seed {}, {} sessions over {} skills, {} useful and {} junk lessons (written by skillmem/note){}",
        r["seed"],
        r["sessions"],
        r["skills"],
        r["useful"],
        r["junk"],
        if anyway > 0.0 {
            format!("; the agent does each junk lesson's step anyway at {anyway}")
        } else {
            String::new()
        }
    ));
    if verbose {
        lines.iter().for_each(|l| out(l));
    }
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    out(&format!(
        "{:>8} | {:>7} {:>6} {:>11} | {:>11} {:>11} {:>12} | {:>14} {:>12}",
        "sessions",
        "trusted",
        "junk",
        "junk share",
        "block notes",
        "junk share",
        "junk tokens",
        "useful retired",
        "junk retired"
    ));
    for cp in r["checkpoints"].as_array().into_iter().flatten() {
        let b = &cp["block"];
        let u = |v: &Value| v.as_u64().unwrap_or(0);
        out(&format!(
            "{:>8} | {:>7} {:>6} {:>11.3} | {:>11} {:>11.3} {:>12.3} | {:>14} {:>12}",
            u(&cp["sessions"]),
            u(&cp["trusted"]),
            u(&cp["trustedJunk"]),
            f(&cp["trustedJunkShare"]),
            u(&b["notes"]),
            f(&b["junkShare"]),
            f(&b["junkTokenShare"]),
            cp["usefulRetired"].as_array().map_or(0, Vec::len),
            u(&cp["junkRetired"])
        ));
    }
    if let Some(cp) = r["checkpoints"].as_array().and_then(|a| a.last()) {
        out(&format!(
            "(trusted by {}; the block is each skill's skillmem/recall for an intent naming all its tasks; junk share of the block by notes and by tokens)",
            cp["trustSource"].as_str().unwrap_or("")
        ));
        for l in cp["trustedJunkNotes"].as_array().into_iter().flatten() {
            out(&format!(
                "  junk trusted: [{}] {} (used {})",
                l["skill"].as_str().unwrap_or(""),
                l["delta"],
                l["used"]
            ));
        }
        for l in cp["usefulRetired"].as_array().into_iter().flatten() {
            out(&format!(
                "  useful lesson retired: [{}] {} ({})",
                l["skill"].as_str().unwrap_or(""),
                l["delta"],
                l["reason"]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generator's premise: no call any session makes has what a junk lesson names, and
    /// every way of applying a useful lesson is a call the bare program is not.
    #[test]
    fn junk_is_never_applied_and_useful_lessons_have_their_forms() {
        let text = |a: &Apply| match a {
            Apply::Sh(c) => c.to_string(),
            Apply::Write(p, content) => format!("/home/dev/web/{p}\n{content}"),
            Apply::Edit(p, old, new) => format!("{p}\n{old}\n{new}"),
        };
        let mut every: Vec<String> = vec![];
        for s in SKILLS {
            every.extend(s.chatter.iter().map(|c| c.to_string()));
            for l in s.useful {
                assert!(!l.applied.is_empty() && l.names.is_empty(), "{}: {:?}", s.name, l.delta);
                every.push(l.bare.to_string());
                every.extend(l.applied.iter().map(text));
                assert!(l.applied.iter().all(|a| text(a) != l.bare), "{}: {:?}", s.name, l.delta);
            }
        }
        for s in SKILLS {
            for j in s.junk {
                assert!(!j.names.is_empty(), "{}: {:?}", s.name, j.delta);
                for name in j.names {
                    assert!(j.delta.contains(name), "{}: {:?} does not name {name}", s.name, j.delta);
                    assert!(!every.iter().any(|c| c.contains(name)), "{}: a call has {name}", s.name);
                }
            }
        }
    }

    #[test]
    fn the_generator_is_a_function_of_its_seed() {
        let draw = |seed| {
            let mut r = Rng(seed);
            (0..8).map(|_| r.below(100)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }
}
