"""Real-world non-secrets by shape, generated from a seed: what a run's packet ordinarily holds.

Each generator returns (category, text) rows in the shapes real tools print: tempfile and
pytest paths, ids of every common kind, digests, codes, timestamps, versions, URLs without
credentials, image and pod names, hashed file names, message ids, chat ids, JSON and prose.
Used by make_secret_corpus.py for bench/secret_corpus/clean.jsonl.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Rows = list[tuple[str, str]]

HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
TEMPFILE = "abcdefghijklmnopqrstuvwxyz0123456789_"  # tempfile._RandomNameSequence.characters
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
K8S_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery rand.SafeEncodeString
_WORD_LIST = (
    "agent escalation deliver sweep verify migrate records resume pause route notify snapshot "
    "fingerprint close recheck phase state budget review deploy rollback release build cache "
    "worker beat broker queue outbox answer reply channel inbox report export import sync "
    "backup restore index schema table orders users invoices metrics events alerts probe"
)
WORDS = tuple(_WORD_LIST.split())
USERS = ("root", "runner", "ci", "build", "vscode", "jenkins", "ubuntu", "dev", "app", "ana")
TESTS = (
    "test_snapshot_fingerprint_changes",
    "test_git_probe_runs_nothing",
    "test_close_rechecks_the_tree",
    "test_pipeline_raise_writes_summary",
    "test_blocked_file_has_four_sections",
    "test_reply_code_is_forgiving",
    "test_routing",
    "test_secret_refusal",
    "test_delivery_retries_then_escalates",
    "test_state_folder_is_locked",
)
SERVICES = ("web", "api", "worker", "beat", "escalation-worker", "ingest", "auth", "gateway")


def non_secrets(seed: int) -> Rows:
    """Every generator's rows, in a fixed order, from one seed."""
    rng = random.Random(seed)
    rows: Rows = []
    for category, make, count in GENERATORS:
        rows += [(category, make(rng)) for _ in range(count)]
    return rows


# --- little helpers ------------------------------------------------------------------------


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def when(rng: random.Random) -> datetime:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return start + timedelta(
        seconds=rng.randint(0, 2 * 365 * 86400), microseconds=rng.randint(0, 999999)
    )


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def ulid(rng: random.Random) -> str:
    millis = int(when(rng).timestamp() * 1000)
    head = "".join(CROCKFORD[(millis >> (5 * i)) & 31] for i in reversed(range(10)))
    return head + pick(rng, CROCKFORD, 16)


def sha(rng: random.Random, n: int = 40) -> str:
    return pick(rng, HEX, n)


def mkdtemp_name(rng: random.Random, prefix: str = "tmp", suffix: str = "") -> str:
    return f"{prefix}{pick(rng, TEMPFILE, 8)}{suffix}"


def slug(rng: random.Random, parts: int = 2, sep: str = "-") -> str:
    return sep.join(rng.choice(WORDS) for _ in range(parts))


def pod(rng: random.Random) -> str:
    template_hash = pick(rng, K8S_SAFE, rng.choice((9, 10)))
    return f"{rng.choice(SERVICES)}-{template_hash}-{pick(rng, K8S_SAFE, 5)}"


def run_no(rng: random.Random) -> str:
    return f"run-{rng.randint(1, 99999)}"


# --- the shapes ----------------------------------------------------------------------------


def acc_gitprobe_path(rng: random.Random) -> str:
    """The reported shape: a temporary folder with a run below it. Half are mkdtemp() names;
    half have 10 mixed-case letters and digits, which reproduces the report's 43 in 300."""
    name = mkdtemp_name(rng, "acc-gitprobe-") if rng.random() < 0.5 else pick(rng, ALNUM, 10)
    if not name.startswith("acc-"):
        name = f"acc-gitprobe-{name}"
    return f"/tmp/{name}/runs/{rng.choice('abcxyz')}"


def temp_path(rng: random.Random) -> str:
    name = mkdtemp_name(rng, rng.choice(("tmp", "tmp", "acc-", "escalate-", "pip-req-build-", "")))
    home = rng.choice(USERS)
    shapes = (
        f"/tmp/{name}",
        f"/tmp/{name}/",
        f"/tmp/{name}/repo/.git/HEAD",
        f"/tmp/{name}/state/phase_state.json",
        f"/tmp/{name}/{run_no(rng)}/BLOCKED.md",
        f"/var/tmp/{name}.json",
        f"/tmp/{mkdtemp_name(rng)}/{mkdtemp_name(rng, 'acc-gitprobe-')}/runs/a",
        f"/home/{home}/.cache/{name}/wheels",
        f"/private/var/folders/{pick(rng, TEMPFILE, 2)}/{pick(rng, TEMPFILE, 22)}0000gn/T/{name}",
        f"/var/folders/{pick(rng, TEMPFILE, 2)}/{pick(rng, TEMPFILE, 22)}0000gn/T/{name}/repo",
        f"C:\\Users\\{home}\\AppData\\Local\\Temp\\{name}",
        f"C:\\Users\\{home}\\AppData\\Local\\Temp\\{name}\\state\\phase_state.json",
        f"/tmp/{name}.{rng.choice(('json', 'md', 'lock', 'log', 'yaml'))}",
        f"/run/user/1000/{name}",
        f"/tmp/.BLOCKED.md.{pick(rng, TEMPFILE, 8)}",
    )
    path = rng.choice(shapes)
    return rng.choice(
        (
            path,
            f"snapshot taken at {path}",
            f"wrote {path} (412 bytes)",
            f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'",
            json.dumps({"kind": "git", "path": path}),
            f"cd {path} && git status --porcelain",
        )
    )


def pytest_path(rng: random.Random) -> str:
    user, n, test = rng.choice(USERS), rng.randint(0, 1200), rng.choice(TESTS)
    base = f"/tmp/pytest-of-{user}/pytest-{n}"
    shapes = (
        f"{base}/{test}0",
        f"{base}/{test[:30]}{rng.randint(0, 3)}/repo",
        f"{base}/popen-gw{rng.randint(0, 7)}/{test}{rng.randint(0, 2)}/state/phase_state.json",
        f"{base}/{rng.choice(('repo', 'runs', 'files', 'state'))}{rng.randint(0, 9)}",
        f"{base}/{test}_{rng.choice(('sqlite', 'redis', 'git', 'none'))}_0/BLOCKED.md",
        f"{base}/{test}0/{mkdtemp_name(rng, 'acc-gitprobe-')}/runs/a",
        f"C:\\Users\\{user}\\AppData\\Local\\Temp\\pytest-of-{user}\\pytest-{n}\\{test}0",
        f"/private/var/folders/{pick(rng, TEMPFILE, 2)}/{pick(rng, TEMPFILE, 22)}0000gn/T/"
        f"pytest-of-{user}/pytest-{n}/{test}0",
    )
    path = rng.choice(shapes)
    return rng.choice(
        (
            path,
            f"E       AssertionError: {path} was not written",
            f"tmp_path = PosixPath('{path}')",
            f"--basetemp={base}",
        )
    )


def uuid_value(rng: random.Random) -> str:
    value = uid(rng)
    value = rng.choice(
        (
            value,
            value.upper(),
            "{" + value + "}",
            f"urn:uuid:{value}",
            value.replace("-", ""),
            str(uuid.UUID(int=rng.getrandbits(128), version=1)),
        )
    )
    return rng.choice(
        (
            value,
            f"request {value} failed with 502",
            f"x-request-id: {value}",
            f"escalation {value} moved to waiting",
            f"aws request id {value}",
            json.dumps({"escalation_id": value, "state": "waiting"}),
            f"/v1/escalations/{value}/events",
        )
    )


def ulid_value(rng: random.Random) -> str:
    value = ulid(rng)
    typeid = f"{rng.choice(('run', 'user', 'case', 'evt'))}_{value.lower()}"
    return rng.choice(
        (
            value,
            f"event {value} recorded",
            f"ulid={value}",
            f"/runs/{value}/artifacts",
            typeid,
            f"created {typeid} for {run_no(rng)}",
            json.dumps({"event": value, "kind": "paused"}),
        )
    )


def git_sha(rng: random.Random) -> str:
    long, short = sha(rng), sha(rng, rng.randint(7, 12))
    tag = f"v{rng.randint(0, 3)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
    return rng.choice(
        (
            long,
            short,
            f"commit {long}",
            f"HEAD is now at {short} {slug(rng, 3, ' ')}",
            f"{short} {slug(rng, 4, ' ')}",
            f"{tag}-{rng.randint(1, 200)}-g{sha(rng, 7)}",
            f"{short}..{sha(rng, len(short))}",
            f"git checkout -b fix/{short}-{slug(rng)}",
            f"https://github.com/acme/agent-escalation/commit/{long}",
            f"https://github.com/acme/api/compare/{short}...{sha(rng, len(short))}",
            f"refs/remotes/origin/{slug(rng)} {long}",
            f"{long} refs/tags/{tag}",
            f"git rev-parse HEAD -> {long}",
            f"fingerprint changed: {long} -> {sha(rng)}",
        )
    )


def hex_digest(rng: random.Random) -> str:
    n = rng.choice((32, 40, 64, 64, 128))
    digest = sha(rng, n)
    name = rng.choice(("sha256", "sha1", "md5", "sha512", "blake2b"))
    sri = base64.b64encode(rng.randbytes(rng.choice((32, 48, 64)))).decode()
    file = f"agent_escalation-{rng.randint(0, 2)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}.tar.gz"
    return rng.choice(
        (
            digest,
            f"{digest}  {file}",
            f"{name}: {digest}",
            f"{name}={digest}",
            f"checksum mismatch: expected {digest}, got {sha(rng, n)}",
            f"X-Hub-Signature-256: sha256={sha(rng, 64)}",
            f'integrity="sha{rng.choice((256, 384, 512))}-{sri}"',
            f"--hash=sha256:{sha(rng, 64)}",
            f'ETag: "{sha(rng, 32)}"',
            f"traceparent: 00-{sha(rng, 32)}-{sha(rng, 16)}-01",
            f"trace {sha(rng, 32)} span {sha(rng, 16)}",
            f"tree hash {digest} for {run_no(rng)}",
            json.dumps({"sha256": sha(rng, 64), "size": rng.randint(100, 10**8)}),
            digest.upper(),
        )
    )


def reply_code(rng: random.Random) -> str:
    code = pick(rng, CROCKFORD, 10)
    typed = rng.choice((code, code.lower(), f"{code[:5]}-{code[5:]}", f"{code[:5]} {code[5:]}"))
    option = rng.choice(("skip", "approve", "retry", "RESET_PHASE", "STOP", "PROCEED", "b"))
    return rng.choice(
        (
            typed,
            f"{typed} {option}",
            f"Reply with {code} and one of: approve, skip, stop",
            f"code {typed} answered {option} by slack:U{pick(rng, CROCKFORD, 8)}",
            f"unknown code {typed} from telegram:{rng.randint(10**8, 10**10)}",
            f"{code} CONFIRM NUCLEAR_RESET",
            f"> {code} {option}\n> sent from my phone",
            json.dumps({"text": f"{code} {option}", "channel": "chat", "sender": "ops"}),
        )
    )


def base64_id(rng: random.Random) -> str:
    node = f"{rng.choice(('User', 'Order', 'Repository', 'Issue', 'Run'))}:{rng.randint(1, 10**10)}"
    relay = base64.b64encode(node.encode()).decode()
    gid = base64.b64encode(f"gid://shopify/Product/{rng.randint(10**9, 10**13)}".encode()).decode()
    short = base64.urlsafe_b64encode(rng.randbytes(rng.choice((6, 9, 12)))).decode().rstrip("=")
    unsplash = f"photo-{rng.randint(10**12, 10**13)}-{sha(rng, 12)}"
    pixel = base64.b64encode(rng.randbytes(rng.randint(40, 90))).decode()
    return rng.choice(
        (
            f'{{"id": "{relay}", "__typename": "{node.split(":")[0]}"}}',
            f'node(id: "{relay}") returned null',
            f"admin_graphql_api_id {gid}",
            f"https://i.imgur.com/{pick(rng, ALNUM, 7)}.{rng.choice(('png', 'jpg', 'gif'))}",
            f"https://images.unsplash.com/{unsplash}?w=800&q=80",
            f"https://www.gravatar.com/avatar/{sha(rng, 32)}?s=80&d=identicon",
            f"https://res.cloudinary.com/acme/image/upload/v{rng.randint(10**9, 2 * 10**9)}/"
            f"avatars/{pick(rng, string.ascii_lowercase + string.digits, 20)}.jpg",
            f"thumbnail {short}.webp",
            f"https://www.youtube.com/watch?v={pick(rng, URLSAFE, 11)}",
            f"screenshot: data:image/png;base64,{pixel}",
            f"image_id={short}",
            f"IMG_{when(rng):%Y%m%d_%H%M%S}.jpg",
        )
    )


def celery_id(rng: random.Random) -> str:
    task = rng.choice(("escalation.deliver", "escalation.sweep", "escalation.escalate"))
    tid = uid(rng)
    return rng.choice(
        (
            f"Task {task}[{tid}] received",
            f"Task {task}[{tid}] succeeded in {rng.random():.4f}s: None",
            f"Task {task}[{tid}] retry: Retry in {rng.choice((1, 2, 4, 8))}s",
            f"celery-task-meta-{tid}",
            f"revoked scheduled task {tid}",
            f"AsyncResult('{tid}').state == 'PENDING'",
            f"celery@{pod(rng)} ready.",
            f"chord {uid(rng)} header {tid}",
            json.dumps({"task_id": tid, "status": "SUCCESS", "date_done": when(rng).isoformat()}),
        )
    )


def timestamp(rng: random.Random) -> str:
    t = when(rng)
    return rng.choice(
        (
            t.isoformat(),
            t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            t.strftime("%Y-%m-%dT%H:%M:%SZ"),
            t.strftime("%Y%m%dT%H%M%SZ"),
            t.strftime("%a, %d %b %Y %H:%M:%S +0000"),
            t.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3],
            t.strftime("%Y-%m-%d_%H-%M-%S"),
            str(int(t.timestamp())),
            str(int(t.timestamp() * 1000)),
            f"{t.timestamp():.6f}",
            f"next_action_at={t.isoformat(' ')}",
            f'[{t:%d/%b/%Y:%H:%M:%S} +0000] "GET /healthz HTTP/1.1" 200',
            f"deadline {t.isoformat()} (in {rng.randint(1, 59)}m)",
            f"x-amz-date: {t:%Y%m%dT%H%M%SZ}",
        )
    )


def semver(rng: random.Random) -> str:
    major, minor, patch = rng.randint(0, 30), rng.randint(0, 40), rng.randint(0, 60)
    base = f"{major}.{minor}.{patch}"
    stamp = when(rng).strftime("%Y%m%d%H%M%S")
    version = rng.choice(
        (
            base,
            f"v{base}",
            f"{base}-rc.{rng.randint(1, 5)}",
            f"{base}-beta.{rng.randint(1, 9)}+build.{rng.randint(1, 999)}",
            f"{base}+sha.{sha(rng, 8)}",
            f"v0.0.0-{stamp}-{sha(rng, 12)}",
            f"{major}.{minor}.dev{rng.randint(1, 90)}+g{sha(rng, 7)}.d{stamp[:8]}",
            f"{base}.post{rng.randint(1, 3)}",
            f"{base}a{rng.randint(1, 4)}",
        )
    )
    package = rng.choice(("celery", "kombu", "redis", "sqlalchemy", "detect-secrets", "apprise"))
    return rng.choice(
        (
            version,
            f"{package}=={version}",
            f"upgraded {package} from {major}.{minor}.0 to {version}",
            f"@acme/escalation-client@{version}",
            f"ghcr.io/acme/api:{version}",
            f"go: downloading github.com/acme/svc {version}",
            f"Python {rng.choice(('3.11', '3.12', '3.13'))}.{rng.randint(0, 12)}",
        )
    )


def url(rng: random.Random) -> str:
    host = rng.choice(("api.example.com", "ci.example.com", "grafana.acme.dev", "acme.io"))
    when_ = when(rng)
    shapes = (
        f"https://{host}/v1/runs/{run_no(rng)}/events?since={when_:%Y-%m-%dT%H:%M:%SZ}&limit=100",
        f"https://{host}/v1/escalations/{uid(rng)}?include=events,replies",
        f"https://github.com/acme/api/actions/runs/{rng.randint(10**9, 10**10)}/job/"
        f"{rng.randint(10**10, 10**11)}",
        f"https://github.com/acme/api/blob/{sha(rng)}/workers/probes.py#L{rng.randint(1, 400)}",
        f"https://github.com/acme/api/pull/{rng.randint(1, 9999)}#issuecomment-"
        f"{rng.randint(10**9, 10**10)}",
        f"s3://acme-artifacts/runs/{when_:%Y/%m/%d}/{run_no(rng)}/part-00000-{uid(rng)}-c000"
        ".snappy.parquet",
        f"s3://acme-logs/{rng.choice(SERVICES)}/{when_:%Y-%m-%d}/{ulid(rng)}.json.gz",
        f"https://acme-artifacts.s3.eu-west-1.amazonaws.com/builds/app-{sha(rng, 7)}.tar.gz",
        f"gs://acme-models/checkpoints/{slug(rng)}/step-{rng.randint(1, 10**6):08d}/",
        f"https://{host}/d/{pick(rng, string.ascii_lowercase + string.digits, 9)}/"
        f"{slug(rng)}?orgId=1&from=now-6h&to=now&var-pod={pod(rng)}",
        f"https://sentry.io/organizations/acme/issues/{rng.randint(10**9, 10**10)}/events/"
        f"{sha(rng, 32)}/",
        f"https://www.notion.so/acme/{slug(rng, 3).title()}-{sha(rng, 32)}",
        f"https://acme.atlassian.net/browse/OPS-{rng.randint(1, 9999)}?focusedCommentId="
        f"{rng.randint(10**5, 10**6)}",
        f"https://{host}/search?q={slug(rng, 2, '+')}&page={rng.randint(1, 20)}&sort=created_at",
        f"https://{host}/?utm_source=slack&utm_medium=notification&utm_campaign={slug(rng)}",
        f"http://localhost:{rng.choice((8000, 8765, 5555))}/dashboard/cases/{uid(rng)}",
        f"https://hub.docker.com/layers/acme/api/{rng.randint(1, 9)}.{rng.randint(0, 9)}/images/"
        f"sha256-{sha(rng, 64)}",
        f"https://pypi.org/project/{rng.choice(('celery', 'apprise', 'dulwich'))}/"
        f"{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}/",
        f"redis://redis-master:6379/{rng.randint(0, 15)}",
        "postgresql+psycopg://app@db.internal:5432/escalations?sslmode=require",
        f"https://{host}/oauth/authorize?client_id={rng.randint(10**5, 10**6)}&response_type=code"
        f"&redirect_uri=https%3A%2F%2F{host}%2Fcallback&scope=read%3Auser",
        f"https://{host}/files/{when_:%Y/%m}/{slug(rng, 2, '_')}_{sha(rng, 8)}.pdf",
        f"https://acme.slack.com/archives/C{pick(rng, CROCKFORD, 10)}/p{int(when_.timestamp())}"
        f"{rng.randint(0, 999999):06d}",
    )
    link = rng.choice(shapes)
    return rng.choice((link, f"see {link}", f"GET {link} -> 200", f"<{link}>"))


def docker_digest(rng: random.Random) -> str:
    digest = f"sha256:{sha(rng, 64)}"
    image = f"ghcr.io/acme/{rng.choice(SERVICES)}"
    return rng.choice(
        (
            f"{image}@{digest}",
            f"Digest: {digest}",
            f"docker pull {image}@{digest}",
            f"Status: Downloaded newer image for {image}:{rng.randint(1, 9)}.{rng.randint(0, 9)}",
            f"{image}   latest   {sha(rng, 12)}   2 days ago   {rng.randint(50, 900)}MB",
            f"containerd://{sha(rng, 64)}",
            f"docker://{sha(rng, 64)}",
            f"imageID: {image}@{digest}",
            f"{sha(rng, 12)}: Pull complete",
            json.dumps(
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest}
            ),
            f"layer {digest} already exists",
        )
    )


def k8s_pod(rng: random.Random) -> str:
    name = pod(rng)
    node = f"gke-prod-pool-{rng.randint(1, 4)}-{sha(rng, 8)}-{pick(rng, K8S_SAFE, 4)}"
    job = (
        f"{rng.choice(('backup', 'sweeper', 'migrate'))}-{rng.randint(28000000, 29999999)}-"
        + pick(rng, K8S_SAFE, 5)
    )
    return rng.choice(
        (
            name,
            f"pod/{name} in CrashLoopBackOff",
            f"kubectl logs {name} -c worker --previous",
            f"Successfully assigned prod/{name} to {node}",
            f"Back-off restarting failed container in pod {name}",
            f"job pod {job} completed",
            f"replicaset.apps/{name.rsplit('-', 1)[0]} scaled to {rng.randint(0, 9)}",
            f"{name}   1/1   Running   {rng.randint(0, 9)}   {rng.randint(1, 59)}m",
            f"{rng.choice(SERVICES)}-{rng.randint(0, 4)} (statefulset) OOMKilled",
            f"node {node} NotReady",
            json.dumps({"pod": name, "namespace": "prod", "phase": "Pending"}),
        )
    )


def run_id(rng: random.Random) -> str:
    t = when(rng)
    return rng.choice(
        (
            run_no(rng),
            f"run_{t:%Y%m%d_%H%M%S}_{sha(rng, 6)}",
            f"esc-{t:%Y-%m-%d}-{rng.randint(1, 999):03d}",
            f"wandb/run-{t:%Y%m%d_%H%M%S}-{pick(rng, string.ascii_lowercase + string.digits, 8)}",
            f"mlflow run {sha(rng, 32)} finished",
            f"scheduled__{t:%Y-%m-%dT%H:00:00}+00:00",
            f"manual__{t.isoformat()}",
            f"GITHUB_RUN_ID={rng.randint(10**9, 10**10)} GITHUB_RUN_ATTEMPT={rng.randint(1, 3)}",
            f"argo workflow {slug(rng)}-{pick(rng, K8S_SAFE, 5)} Succeeded",
            f"buildkite build #{rng.randint(1, 99999)} ({uid(rng)})",
            f"pipeline {slug(rng)} phase {rng.randint(1, 9)} of {run_no(rng)}",
            f"run_id: {run_no(rng)}-{pick(rng, string.ascii_lowercase + string.digits, 6)}",
        )
    )


def hashed_filename(rng: random.Random) -> str:
    name = rng.choice(("app", "main", "vendor", "runtime", "index", "styles", "polyfills"))
    ext = rng.choice(("js", "css", "js.map"))
    file = rng.choice(
        (
            f"{name}.{sha(rng, 8)}.{ext}",
            f"{name}.{sha(rng, 20)}.{ext}",
            f"{rng.randint(1, 900)}.{sha(rng, 8)}.chunk.{ext}",
            f"{name}.{sha(rng, 16)}.chunk.{ext}",
            f"{name}-{pick(rng, URLSAFE, 8)}.{ext}",
            f"chunk-{pick(rng, CROCKFORD, 8)}.{ext}",
            f"_app-{sha(rng, 16)}.{ext}",
            f"application-{sha(rng, 64)}.css",
            f"style.min.{sha(rng, 64)}.css",
            f"{name}.{sha(rng, 12)}.{ext}",
        )
    )
    folder = rng.choice(("", "static/js/", "/assets/", "dist/", "_next/static/chunks/pages/"))
    path = folder + file
    return rng.choice(
        (
            path,
            f"GET /{path.lstrip('/')} 404",
            f"emitted {path} ({rng.randint(1, 900)} kB)",
            f'<script src="/{path.lstrip("/")}"></script>',
            f"agent_escalation-{rng.randint(0, 2)}.{rng.randint(0, 9)}.0-py3-none-any.whl",
            f"__pycache__/{rng.choice(WORDS)}.cpython-311.pyc",
        )
    )


def message_id(rng: random.Random) -> str:
    t = when(rng)
    gmail = f"CA{pick(rng, URLSAFE + '+=', rng.randint(40, 56))}@mail.gmail.com"
    box = f"{pick(rng, string.ascii_uppercase, 2)}{rng.randint(0, 9)}PR0{rng.randint(1, 9)}MB"
    box += str(rng.randint(1000, 9999))
    outlook = f"{box}{pick(rng, string.ascii_uppercase + string.digits, 26)}@{box}.eurprd07.prod"
    outlook += ".outlook.com"
    ses = f"0100{sha(rng, 12)}-{uid(rng)}-000000@email.amazonses.com"
    local = rng.choice(
        (
            gmail,
            outlook,
            ses,
            f"{t:%Y%m%d%H%M%S}.{sha(rng, 8)}@escalate.example.com",
            f"{int(t.timestamp())}.{rng.randint(1000, 99999)}.{rng.randint(1, 9)}@worker-3",
            f"{uid(rng)}@notify.example.com",
        )
    )
    header = rng.choice(("Message-ID", "In-Reply-To", "References", "Message-Id"))
    return rng.choice((f"{header}: <{local}>", f"<{local}>", f"reply to <{local}> matched"))


def slack_id(rng: random.Random) -> str:
    ident = f"{rng.choice('UCTWGDBAF')}0{pick(rng, CROCKFORD, rng.choice((7, 8, 9, 10)))}"
    ts = f"{int(when(rng).timestamp())}.{rng.randint(0, 999999):06d}"
    return rng.choice(
        (
            ident,
            f"slack:{ident}",
            f"<@{ident}> approved",
            f"<#{ident}|ops-escalations>",
            f"thread_ts={ts}",
            f"posted to {ident} at ts {ts}",
            json.dumps({"user": ident, "channel": f"C0{pick(rng, CROCKFORD, 9)}", "ts": ts}),
            f"team T0{pick(rng, CROCKFORD, 8)} app A0{pick(rng, CROCKFORD, 9)}",
        )
    )


def telegram_id(rng: random.Random) -> str:
    chat = rng.choice((rng.randint(10**8, 10**10), -rng.randint(10**12, 2 * 10**12)))
    file_id = "AgACAgIAAxkBAAI" + pick(rng, URLSAFE, rng.randint(50, 70))
    return rng.choice(
        (
            f"telegram:{chat}",
            f"chat_id={chat}",
            f"message {rng.randint(1, 10**6)} in chat {chat}",
            json.dumps({"update_id": rng.randint(10**8, 10**9), "message": {"chat": {"id": chat}}}),
            json.dumps({"file_id": file_id, "file_unique_id": pick(rng, URLSAFE, 16)}),
            f"@{slug(rng, 2, '_')}_bot replied to {chat}",
            f"https://t.me/c/{abs(chat)}/{rng.randint(1, 99999)}",
        )
    )


def json_snippet(rng: random.Random) -> str:
    t = when(rng)
    objects = (
        {"run_id": run_no(rng), "path": f"/tmp/{mkdtemp_name(rng)}", "sha": sha(rng)},
        {
            "kind": "git",
            "path": f"/tmp/{mkdtemp_name(rng, 'acc-gitprobe-')}/runs/a",
            "value": sha(rng, 64),
        },
        {"escalation_id": uid(rng), "state": "waiting", "next_action_at": t.isoformat()},
        {"image": f"ghcr.io/acme/api@sha256:{sha(rng, 64)}", "pod": pod(rng)},
        {"evidence": [{"kind": "log", "ref": f"s3://acme-logs/{run_no(rng)}/verify.log"}]},
        {"event": ulid(rng), "task_id": uid(rng), "attempt": rng.randint(1, 5)},
        {
            "version": f"{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
            "commit": sha(rng, 7),
        },
        {"owner": f"slack:U0{pick(rng, CROCKFORD, 8)}", "code_hash": sha(rng, 12)},
        {"files": {"state_dir": f"/tmp/pytest-of-ci/pytest-{rng.randint(0, 99)}/runs0"}},
        {"created_at": t.isoformat(), "etag": sha(rng, 32), "size": rng.randint(1, 10**9)},
    )
    value = rng.choice(objects)
    text = json.dumps(value, indent=rng.choice((None, 2)))
    return text if rng.random() < 0.8 else text.replace('"', '\\"')


SENTENCES = (
    "Retried {slug} {n} times; the last attempt at {clock} timed out after {n}s.",
    "The {word} step failed on {run}; rollback to {sha7} needs a human decision.",
    "Snapshot {path} changed between pause and resume, so the close recheck refused.",
    "Approve deleting {n} stale objects under s3://acme-tmp/{run}/?",
    "Token budget for {run} is {n}k of {n}k; the password reset ticket OPS-{n} is unrelated.",
    "Pod {pod} was OOMKilled at {clock}; image {image} was pulled {n}m earlier.",
    "The reviewer asked for {n} more evidence entries before the {word} phase can proceed.",
    "Spend reached ${n}.{n2} of the ${n}.00 budget; pausing until an operator answers.",
    "Task {task} is still PENDING after {n} minutes; revoked it and scheduled {task2}.",
    "{word} {word2} {word3}: rotate the API key for svc-{word} before {date}.",
    "The secret scan refused {run} once, the operator checked, and the second packet passed.",
    "Merged #{n} ({sha7}) into main; CI run {ghrun} is green.",
)


def prose(rng: random.Random) -> str:
    values = {
        "slug": slug(rng),
        "n": rng.randint(2, 999),
        "n2": f"{rng.randint(0, 99):02d}",
        "clock": when(rng).strftime("%H:%M:%S"),
        "word": rng.choice(WORDS),
        "word2": rng.choice(WORDS),
        "word3": rng.choice(WORDS),
        "run": run_no(rng),
        "sha7": sha(rng, 7),
        "path": f"/tmp/{mkdtemp_name(rng)}",
        "pod": pod(rng),
        "image": f"ghcr.io/acme/api@sha256:{sha(rng, 64)}",
        "task": uid(rng),
        "task2": uid(rng),
        "date": when(rng).date().isoformat(),
        "ghrun": rng.randint(10**9, 10**10),
    }
    return rng.choice(SENTENCES).format(**values)


GENERATORS: list[tuple[str, Callable[[random.Random], str], int]] = [
    ("gitprobe_path", acc_gitprobe_path, 300),
    ("temp_path", temp_path, 400),
    ("pytest_path", pytest_path, 300),
    ("uuid", uuid_value, 250),
    ("ulid", ulid_value, 200),
    ("git_sha", git_sha, 300),
    ("hex_digest", hex_digest, 300),
    ("reply_code", reply_code, 200),
    ("base64_id", base64_id, 250),
    ("celery_id", celery_id, 200),
    ("timestamp", timestamp, 250),
    ("semver", semver, 250),
    ("url", url, 400),
    ("docker_digest", docker_digest, 200),
    ("k8s_pod", k8s_pod, 250),
    ("run_id", run_id, 250),
    ("hashed_filename", hashed_filename, 300),
    ("message_id", message_id, 200),
    ("slack_id", slack_id, 200),
    ("telegram_id", telegram_id, 200),
    ("json", json_snippet, 250),
    ("prose", prose, 250),
]
