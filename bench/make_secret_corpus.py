"""Write the labelled secret corpus (bench/secret_corpus/*.jsonl); seeded, so reruns match.

Every secret here is FAKE: random characters in a provider's shape, never a real credential.
The hand-written rows come first; the generated ones (secret_shapes.py, non_secret_shapes.py)
follow, from their own seeds, so adding to them leaves the rows above unchanged.
Run: .venv/bin/python bench/make_secret_corpus.py
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from pathlib import Path

from non_secret_shapes import non_secrets
from secret_shapes import more_secrets

OUT = Path(__file__).parent / "secret_corpus"
rng = random.Random(20260516)

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64(n: int, *, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(rng.randbytes(n)).decode()


def fake_jwt(claims: dict[str, object]) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{b64url(rng.randbytes(32))}"


def pem(label: str, lines: int = 4) -> str:
    body = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def sha(n: int = 40) -> str:
    return rand(HEX, n)


def uid() -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def secrets() -> list[dict[str, str]]:
    rows: list[tuple[str, str, str]] = []

    def add(category: str, kind: str, text: str) -> None:
        rows.append((category, kind, text))

    # --- provider formats -------------------------------------------------------------
    p = "provider"
    add(p, "AWS access key", f"deploy failed: aws sts says AKIA{rand(UPPER_ALNUM, 16)} is disabled")
    add(p, "AWS access key", f"boto3 used access key id AKIA{rand(UPPER_ALNUM, 16)} from ~/.aws")
    add(p, "AWS access key", f"assumed-role session ASIA{rand(UPPER_ALNUM, 16)} expired mid-upload")
    add(p, "AWS secret key", f"deploy failed: AWS_SECRET_ACCESS_KEY={rand(B64, 40)} rejected")
    add(
        p,
        "AWS secret key",
        f"[default]\naws_secret_access_key = {rand(B64, 40)}\nregion = eu-west-1",
    )
    for prefix in ("ghp", "gho", "ghs", "ghu", "ghr"):
        add(p, "GitHub token", f"git push failed with {prefix}_{rand(ALNUM, 36)} (403 forbidden)")
    add(p, "GitHub token", f"GITHUB_TOKEN=ghp_{rand(ALNUM, 36)} set in the runner env")
    for _ in range(2):
        token = f"github_pat_{rand(ALNUM, 22)}_{rand(ALNUM, 59)}"
        add(p, "GitHub token", f"clone via https with fine-grained token {token} failed")
    add(p, "GitLab token", f"glab auth login --token glpat-{rand(URLSAFE, 20)} returned 401")
    add(p, "GitLab token", f"CI_JOB_TOKEN fallback: glpat-{rand(URLSAFE, 20)} in .gitlab-ci.yml")
    add(p, "GitLab token", f"runner registered with glrt-{rand(URLSAFE, 24)}")
    bot = f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}"
    add(p, "Slack token", f"slack notify failed, token {bot} invalid_auth")
    user = f"xoxp-{rand(string.digits, 12)}-{rand(string.digits, 12)}-{rand(string.digits, 13)}"
    add(p, "Slack token", f"SLACK_USER_TOKEN={user}-{rand(HEX, 32)}")
    add(
        p,
        "Slack token",
        f"socket mode app token xapp-1-A{rand(UPPER_ALNUM, 10)}-"
        f"{rand(string.digits, 13)}-{rand(HEX, 64)}",
    )
    for _ in range(2):
        hook = (
            f"https://hooks.slack.com/services/T{rand(UPPER_ALNUM, 8)}/B{rand(UPPER_ALNUM, 10)}"
            f"/{rand(ALNUM, 24)}"
        )
        add(p, "Slack webhook", f"alert webhook {hook} returned 404 no_team")
    add(p, "Stripe key", f"charge failed: Stripe key sk_live_51{rand(ALNUM, 97)} revoked")
    add(p, "Stripe key", f"refund job uses restricted key rk_live_{rand(ALNUM, 24)}")
    add(p, "Stripe key", f"test suite used sk_test_{rand(ALNUM, 24)} against live mode")
    add(p, "Stripe key", f"STRIPE_SECRET_KEY=sk_test_51{rand(ALNUM, 97)}")
    add(p, "OpenAI API key", f"openai 401 for sk-{rand(ALNUM, 20)}T3BlbkFJ{rand(ALNUM, 20)}")
    proj = f"sk-proj-{rand(URLSAFE, 74)}T3BlbkFJ{rand(URLSAFE, 74)}"
    add(p, "OpenAI API key", f"OPENAI_API_KEY={proj} hit the rate limit")
    add(p, "OpenAI API key", f"eval harness key sk-svcacct-{rand(URLSAFE, 48)} lacks model access")
    add(p, "OpenAI API key", f"client = OpenAI(api_key='sk-{rand(ALNUM, 48)}')")
    add(p, "Anthropic API key", f"anthropic 401: key sk-ant-api03-{rand(URLSAFE, 93)}AA revoked")
    add(p, "Anthropic API key", f"ANTHROPIC_API_KEY=sk-ant-api03-{rand(URLSAFE, 93)}AA")
    add(p, "Anthropic API key", f"admin key sk-ant-admin01-{rand(URLSAFE, 93)}AA used in a job")
    add(p, "Google API key", f"maps geocode 403 with key AIza{rand(URLSAFE, 35)}")
    add(p, "Google API key", f"GOOGLE_API_KEY=AIza{rand(URLSAFE, 35)} in config/prod.env")
    add(p, "Hugging Face token", f"hub download 401, HF_TOKEN=hf_{rand(string.ascii_letters, 34)}")
    add(p, "Hugging Face token", f"pushing adapter with hf_{rand(string.ascii_letters, 34)} failed")
    add(p, "Twilio API key", f"twilio client created with SK{rand(HEX, 32)} and 401 came back")
    add(p, "SendGrid API key", f"mail send 403: SG.{rand(URLSAFE, 22)}.{rand(URLSAFE, 43)}")
    add(p, "SendGrid API key", f"SENDGRID_API_KEY=SG.{rand(URLSAFE, 22)}.{rand(URLSAFE, 43)}")
    add(p, "npm token", f"npm publish: //registry.npmjs.org/:_authToken=npm_{rand(ALNUM, 36)}")
    add(p, "npm token", f"NPM_TOKEN npm_{rand(ALNUM, 36)} lacks publish rights")
    add(p, "PyPI token", f"twine upload -p pypi-AgEIcHlwaS5vcmc{rand(URLSAFE, 120)} failed 403")
    claims = {"sub": "svc-deploy", "iat": 1778900000, "exp": 1778903600}
    add(p, "JSON Web Token", f"Authorization header carried {fake_jwt(claims)} after expiry")
    add(p, "JSON Web Token", f"session cookie jwt={fake_jwt({'uid': 8841, 'role': 'admin'})}")
    discord = f"{rng.choice('MNO')}{rand(URLSAFE, 23)}.{rand(URLSAFE, 6)}.{rand(URLSAFE, 27)}"
    add(p, "Discord bot token", f"discord bot login failed for {discord}")
    add(
        p,
        "Telegram bot token",
        f"telegram sendMessage 401 bot{rand(string.digits, 10)}:AA{rand(URLSAFE, 33)}",
    )
    add(p, "Mailchimp key", f"mailchimp list sync used {rand(LOWER_ALNUM, 32)}-us21")
    hook = f"https://discord.com/api/webhooks/{rand(string.digits, 18)}/{rand(URLSAFE, 68)}"
    add(p, "Discord webhook", f"release notes post failed: {hook} 401")
    add(
        p,
        "Azure storage key",
        "DefaultEndpointsProtocol=https;AccountName=acmelogs;"
        f"AccountKey={rand(B64, 86)}==;EndpointSuffix=core.windows.net",
    )

    # --- private keys -----------------------------------------------------------------
    k = "private_key"
    add(k, "private key", f"ssh-agent refused id_rsa:\n{pem('RSA PRIVATE KEY')}")
    add(k, "private key", f"tls.key contents {pem('EC PRIVATE KEY', 2)}".replace("\n", " "))
    add(k, "private key", f"deploy key:\n{pem('OPENSSH PRIVATE KEY', 6)}")
    add(k, "private key", f"service-account private_key: {pem('PRIVATE KEY')}".replace("\n", "\\n"))
    add(k, "private key", f"openssl read {pem('ENCRYPTED PRIVATE KEY', 3)}")
    add(k, "private key", f"legacy key {pem('DSA PRIVATE KEY', 2)}")
    add(k, "private key", f"gpg import failed:\n{pem('PGP PRIVATE KEY BLOCK', 5)}")
    add(k, "private key", "truncated log line: -----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA")

    # --- URL credentials --------------------------------------------------------------
    u = "url_credentials"
    for template in (
        "migration failed: postgres://admin:{pw}@db.internal:5432/app",
        "DATABASE_URL=postgresql+psycopg://app_rw:{pw}@10.0.3.12:5432/escalations",
        "mysql://root:{pw}@mysql-0.mysql:3306/shop refused connection",
        "celery broker redis://:{pw}@redis-master:6379/0 timed out",
        "result backend rediss://default:{pw}@cache.example.net:6380/1",
        "amqp://svc_worker:{pw}@rabbitmq:5672/prod vhost missing",
        "mongodb+srv://reporting:{pw}@cluster0.ab12c.mongodb.net/?retryWrites=true",
        "fetched https://deploy:{pw}@artifacts.example.com/releases/app.tgz",
        "ftp://backup:{pw}@ftp.example.org/nightly/ failed on upload",
        "smtp://alerts%40example.com:{pw}@smtp.example.com:587 auth error",
        "pip index https://__token__:{pw}@pypi.example.com/simple/ 401",
        "git clone https://x-access-token:{pw}@github.com/acme/infra.git",
    ):
        pw = rand(ALNUM, rng.randint(10, 18)) + rng.choice(["", "%21", "_9", "-x"])
        add(u, "URL credentials", template.format(pw=pw))
    add(u, "URL credentials", "redis://:p@ss-W0rd!@localhost:6379 (password has an @)")
    basic = base64.b64encode(f"deploy:{rand(ALNUM, 14)}".encode()).decode()
    add(u, "basic auth credentials", f"Authorization: Basic {basic} was rejected by nexus")

    # --- prose passwords and keyword assignments ----------------------------------------
    w = "prose_password"
    for text in (
        "the admin password is hunter2!",
        "db password=Tr0ub4dor&3xyz",
        "use pwd: S3cure!Pass",
        "login failed for root, password was Winter2024!",
        "The password for the staging DB is k8Lm!zQ2",
        "MYSQL_ROOT_PASSWORD=rootpw123 in docker-compose.yml",
        "set DB_PASS=Qx7#mLp2 and retried the migration",
        "passwd hunter22 did not work on the jump host",
        "I tried the password 'correct horse battery staple' from the wiki",
        "PGPASSWORD=Xk2!mn9Q psql -h db -U app failed",
        "curl -u admin:Adm1n!2024 https://jenkins.internal/api/json returned 403",
        "password: Summer2023 (from the onboarding doc)",
        '{"username": "svc-backup", "password": "pa55w0rd!"}',
        "the wifi password is Blu3Sky#42",
        "reset the admin pwd to Adm!n2025 per ticket OPS-311",
        "new password: Fr0sty-Morn1ng",
        "the root password was changed to Qwerty!234",
        "export DB_PASSWORD='p@ssW0rd-2024'",
        "ssh key passphrase is 'blue-moon-ocean-42'",
        "password=sunshine99",
        "log in with user ops and password Opsteam#1",
        "smtp_password = 'mailer-2026!'",
        "ALTER USER app WITH PASSWORD 'N3w-Secr3t!';",
        "keystore password is changeit2 not changeit",
        "the vpn password is now set to Gr33n-Apple",
        "REDIS_PASSWORD: kP9zW2xQ7r",
        "pass=L3tM3In! for the staging basic auth",
        "the password is letmein",
        f"api_key={rand(ALNUM, 32)} in settings_local.py",
        f"client_secret: {rand(URLSAFE, 40)}",
        f"token={rand(LOWER_ALNUM, 24)} passed on the command line",
        f"DJANGO_SECRET_KEY='{rand(ALNUM + '!@#%^&*(-_=+)', 50)}'",
        f"x-api-key: {rand(ALNUM, 28)}",
    ):
        kind = "password"
        if text.startswith(("api_key", "x-api-key")):
            kind = "API key"
        elif text.startswith(("client_secret", "DJANGO")):
            kind = "secret"
        elif text.startswith("token="):
            kind = "token"
        add(w, kind, text)

    # --- generic high-entropy secrets, no provider shape and no keyword ---------------
    h = "high_entropy"
    add(h, "high-entropy string", f"HMAC signing value rotated to {rand(B64, 43)}=")
    add(h, "high-entropy string", f"webhook verification failed, shared value {rand(URLSAFE, 32)}")
    add(h, "high-entropy string", f"fernet key {b64(32, urlsafe=True)}")
    add(h, "high-entropy string", f"X-Signature header: {b64(48)}")
    add(h, "bearer token", f"Authorization: Bearer {rand(URLSAFE, 40)}")
    add(h, "bearer token", f"curl -H 'Authorization: Bearer {rand(ALNUM, 64)}' api/v2/runs")
    add(h, "high-entropy string", f"vault unseal share {b64(33)}")
    add(h, "high-entropy string", f"cookie session={rand(URLSAFE, 48)}; Path=/; HttpOnly")
    auth = base64.b64encode(f"bot:{rand(ALNUM, 30)}".encode()).decode()
    config = json.dumps({"auths": {"registry.example.com": {"auth": auth}}})
    encoded = base64.b64encode(config.encode()).decode()
    add(h, "high-entropy string", f"DOCKER_AUTH_CONFIG={encoded}")
    rows += more_secrets(20261201)
    return [{"text": t, "category": c, "kind": kd} for c, kd, t in rows]


PROSE = [
    "the token expired at 14:02 and the run stopped",
    "password reset flow is broken for SSO users",
    "rotate the API key next week",
    "password is required",
    "the password is missing from the vault",
    "password: see vault",
    "password is wrong for user admin",
    "the password is incorrect",
    "token refresh failed with 401",
    "the secret is stored in AWS Secrets Manager",
    "API key was revoked by the provider",
    "password: ********",
    "token=<redacted>",
    "password=${DB_PASSWORD}",
    "api_key: $OPENAI_API_KEY",
    "secret: {{ .Values.db.secret }}",
    "max_tokens=4096",
    "token_count: 15234",
    "used 128000 tokens in the last call",
    "the password is at least 12 characters long",
    "password is hashed with bcrypt",
    "the API key is stored in 1Password",
    "the token is valid for 3600 seconds",
    "password is SHA256-hashed before storage",
    "the token is JWT-based",
    "use a token with repo scope",
    "the password is correct but MFA fails",
    "token: expired",
    "password: reset required",
    "client_secret: missing",
    "set GITHUB_TOKEN in the repo secrets",
    "api_key=None",
    "password=''",
    "token=null",
    "secret_ref=vault:kv/data/app#db",
    "passwordless login is enabled for staff",
    "the secret to fixing this is retrying with backoff",
    "PASSWORD_MIN_LENGTH=12",
    "auth_token_ttl=3600",
    "the keyword 'password' appears in 3 log lines",
    "grep -r password src/ returned 3 hits",
    "compass heading 270, bypass enabled for maintenance",
    "password_hash = $2b$12$ stored per user",
    "UPDATE users SET password_hash = %s WHERE id = %s",
    "ALTER USER app WITH PASSWORD '***'",
    "the password manager export is pending",
    "tokens are rotated nightly by the beat task",
    "the tokenizer truncated the prompt at 8192",
    "secret/db-credentials created in namespace prod",
    "kubectl get secret db-creds -o yaml shows no data",
    "password=changeme is the chart default, override it",
    "the user typed the wrong password three times",
    "ask ops to rotate the Stripe key before launch",
    "API keys are scoped per project",
    "the private key file is missing from /etc/ssl/private",
    "token budget exceeded: spent 210k of 200k",
    "pwd: /home/ci/workspace/agent-escalation",
    "the password prompt hung the non-interactive run",
    'password authentication failed for user "app"',
    "FATAL: password authentication failed for user postgres",
    "error: GITHUB_TOKEN is not set",
    "secret_key_base missing in production.rb",
    "the access key was deactivated in IAM",
    "password is stored in the team vault under ops/db",
    "the token is scoped to read:packages",
    "password: <from 1Password item 'prod db'>",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "DB_PASSWORD=xxxxxxxx",
    "Authorization: Bearer <token>",
    "redis://:${REDIS_PASSWORD}@redis:6379/0",
    "amqp://guest:<password>@rabbit:5672//",
    "postgres://app:***@db:5432/app",
    "mysql://root:%(password)s@db/app",
    "the new password policy requires 14 characters",
    "token exchange with the IdP timed out after 30s",
    "bearer token missing from request headers",
    "Basic auth is disabled on the admin endpoint",
    "the passphrase prompt blocks ssh-add in CI",
    "secrets.yaml was not committed, as intended",
    "the password was reset by the helpdesk",
    "password changed successfully",
    "the token was revoked after the incident",
]


def clean() -> list[dict[str, str]]:
    rows: list[tuple[str, str]] = []

    def add(category: str, text: str) -> None:
        rows.append((category, text))

    for text in PROSE:
        add("prose", text)
    for _ in range(12):
        add("git_sha", f"commit {sha()} broke the build")
        add("git_sha", f"HEAD is now at {sha(rng.randint(7, 12))} fix flaky test")
    for _ in range(6):
        add("git_sha", sha())
        add("git_sha", f"reverted {sha(7)} and {sha(7)}; bisect points at {sha()}")
        add("git_sha", f"Merge pull request #{rng.randint(10, 9999)} from acme/fix-{sha(7)}")
    for _ in range(10):
        add("sha256", f"{sha(64)}  dist/agent_escalation-0.1.0.tar.gz")
        add("sha256", f"checksum mismatch: expected {sha(64)}, got {sha(64)}")
    add("sha256", f"sha512sum {sha(128)} release.zip")
    add("sha256", f"md5 {sha(32)} of the export")
    for _ in range(8):
        add("docker_digest", f"pulled ghcr.io/acme/api@sha256:{sha(64)}")
        add("docker_digest", f"Digest: sha256:{sha(64)} Status: Downloaded newer image")
    for _ in range(12):
        add("uuid", f"request {uid()} failed with 502")
        add("celery_id", f"Task escalation.deliver[{uid()}] succeeded in 0.0{rng.randint(1, 9)}s")
    for _ in range(4):
        add("uuid", uid().upper())
        add("celery_id", f"revoked scheduled task {uid()} and {uid()}")
    for _ in range(10):
        clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        add("timestamp", f"2026-05-{rng.randint(10, 28)}T{clock}.{rng.randint(0, 999):03d}Z paused")
    add("timestamp", "next_action_at=2026-05-16 10:22:31+00:00")
    for version in ("5.7.0", "v2.14.3-rc.1+build.5", "1.5.0", "0.0.50", "3.11.7", "v0.29.1"):
        add("semver", f"upgraded to {version} from {rng.randint(0, 4)}.{rng.randint(0, 20)}.0")
    add("semver", "celery==5.7.0 kombu==5.7.0 redis==8.1.0 sqlalchemy==2.1.9")
    for text in PATHS + TRACES + URLS + LOGS + SQL + JSONS + K8S + NETWORK + MISC:
        add("misc", text)
    for word in ("hello", "escalation", "approved", "paused by operator", "run-8841 resumed"):
        add("base64", f"payload {base64.b64encode(word.encode()).decode()}")
    for sentence in (
        "The quick brown fox jumps over the lazy dog",
        "Migrate 120 records and verify totals match source.",
        "please approve the rollback of release 42",
    ):
        add("base64", f"message body (base64): {base64.b64encode(sentence.encode()).decode()}")
    add(
        "base64",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42"
        "mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    )
    add("base64", "integrity sha512-" + base64.b64encode(hashlib.sha512(b"x").digest()).decode())
    add("base64", "eyJhIjoxfQ== decodes to a tiny JSON object")
    cursor = json.dumps({"offset": 100, "sort": "created_at", "direction": "desc"})
    add("base64", f"next page: ?cursor={base64.b64encode(cursor.encode()).decode()}")
    add("random_ids", f"ci ssh key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rand(B64, 43)} ci@runner")
    add("random_ids", f"authorized_keys has ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{rand(B64, 300)}")
    add("random_ids", f"server cert:\n{pem('CERTIFICATE', 5)}")
    add("random_ids", f"verify with {pem('PUBLIC KEY', 3)}".replace("\n", " "))
    for prefix in ("ch", "cus", "pi", "evt", "in", "sub"):
        add("random_ids", f"stripe object {prefix}_{rand(ALNUM, 24)} not found")
    for kind in ("document", "spreadsheets", "file"):
        add("random_ids", f"notes in https://docs.google.com/{kind}/d/{rand(URLSAFE, 44)}/edit")
    add("random_ids", f"x-amz-id-2: {rand(B64, 76)}=")
    add("random_ids", f"X-Amz-Cf-Id: {rand(URLSAFE, 56)}==")
    add("random_ids", f"request_id={rand(URLSAFE, 32)} correlation-id: {rand(ALNUM, 28)}")
    add("random_ids", f"ulid 01H{rand('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 23)}")
    add("random_ids", f"nanoid {rand(URLSAFE, 21)} created")
    add("random_ids", f"youtube id {rand(URLSAFE, 11)}")
    add("random_ids", f"<celery.result.AsyncResult object at 0x7f{rand(HEX, 10)}>")
    add(
        "random_ids",
        f"operation-{rand(string.digits, 13)}-{rand(HEX, 13)}-{rand(HEX, 8)}-"
        f"{rand(HEX, 8)} is still RUNNING",
    )
    add("random_ids", f"container {sha(64)} exited 137; short id {sha(12)}")
    add("random_ids", f"bundle main.{sha(20)}.js and vendor.{sha(8)}.css")
    rows += non_secrets(20261201)
    return [{"text": t, "category": c} for c, t in rows]


PATHS = [
    "/home/runner/work/agent-escalation/agent-escalation/.venv/lib/python3.11/site-packages/"
    "celery/app/trace.py",
    "/var/lib/postgresql/16/main/pg_wal/000000010000000A000000FF",
    "C:\\Users\\build\\AppData\\Local\\Temp\\pytest-of-build\\pytest-42\\test_routing0",
    "src/main/java/com/acme/escalation/delivery/ApprissDeliveryAdapterConfiguration.java",
    "tests/workflows/test_routing.py::test_critical_case_routes_to_primary_and_copies PASSED",
    "s3://acme-artifacts/builds/2026/05/16/app-3f2a1bc.tar.gz",
    "/etc/ssl/certs/ca-certificates.crt not found",
    "~/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots",
    "node_modules/@babel/plugin-transform-modules-commonjs/lib/index.js",
    "/run/secrets/db_password is mounted read-only",
    "bench/secret_corpus/clean.jsonl",
    "~/.ssh/id_ed25519.pub",
]
TRACES = [
    'Traceback (most recent call last):\n  File "/app/workers/tasks.py", line 42, in deliver\n'
    "    result = apprise_obj.notify(body=body)\nTimeoutError: timed out",
    "sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed: "
    'connection to server at "10.0.3.12", port 5432 failed: Connection refused',
    "KeyError: 'requested_action'",
    "at org.springframework.beans.factory.support.AbstractAutowireCapableBeanFactory."
    "doCreateBean(AbstractAutowireCapableBeanFactory.java:617)",
    "java.lang.IllegalStateException: Failed to load ApplicationContext\n\tat org.junit."
    "jupiter.engine.execution.InvocationInterceptorChain.proceed(InvocationInterceptorChain.java:64)",
    "Caused by: java.net.SocketTimeoutException: Read timed out at java.base/sun.nio.ch."
    "NioSocketImpl.timedRead(NioSocketImpl.java:288)",
    "goroutine 1 [running]:\nmain.main()\n\t/home/ci/go/src/github.com/acme/svc/cmd/server/"
    "main.go:42 +0x1d\nexit status 2",
    "panic: runtime error: invalid memory address or nil pointer dereference [signal SIGSEGV: "
    "segmentation violation code=0x1 addr=0x18 pc=0x4a5f2c]",
    "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value', src/main.rs:14:5",
    "E   AssertionError: assert 'paused' == 'stopped'",
    "celery.exceptions.SoftTimeLimitExceeded: SoftTimeLimitExceeded()",
    "redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.",
]
URLS = [
    "https://github.com/acme/agent-escalation/pull/123#discussion_r1622334455",
    "https://ci.example.com/job/build/4821/console",
    "https://user@git.example.com/acme/infra.git",
    "postgres://app@db:5432/app?sslmode=require",
    "https://docs.celeryq.dev/en/stable/userguide/configuration.html#broker-transport-options",
    "https://o123456.ingest.sentry.io/api/4505123456789/envelope/",
    f"https://{sha(32)}@o123456.ingest.sentry.io/4505",
    "https://acme.slack.com/archives/C04ABCDEF12/p1715856151000200",
    "https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups",
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
    "https://drive.google.com/file/d/1aBcD_efGhIjKlMnOpQrStUvWxYz012/view?usp=sharing",
    "https://example.com/search?q=password+reset&page=2",
    "http://localhost:8000/answer/esc-2026-10-16-005?choice=approve",
    "mailto:ops@example.com",
    "https://pypi.org/project/detect-secrets/1.5.0/",
    "https://hooks.example.com/notify (our own relay, not Slack)",
]
LOGS = [
    "2026-05-16T10:22:31.123Z INFO worker-3 celery.worker.strategy Received task: "
    "escalation.deliver",
    '10.0.3.7 - - [16/May/2026:10:22:31 +0000] "GET /api/v1/escalations?state=waiting HTTP/1.1" '
    '200 512 "-" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) '
    'Chrome/124.0.0.0 Safari/537.36"',
    "WARNING apprise: Failed to send Slack notification: 404 - channel_not_found",
    "[2026-05-16 10:22:31,123: ERROR/ForkPoolWorker-2] Task escalation.sweep raised unexpected",
    'level=error ts=2026-05-16T10:22:31Z caller=main.go:88 msg="probe failed" err="EOF"',
    'npm ERR! code E401 npm ERR! Unable to authenticate, need: Basic realm="GitHub Packages"',
    "pytest: 412 passed, 3 skipped, 1 xfailed in 38.21s",
    "ruff check: All checks passed!",
    "verify failed 3 times in a row on task migrate-records",
    "spend $52.10 exceeds the $50.00 budget for run-8841",
    "HTTP 429 Too Many Requests; Retry-After: 30",
    "dial tcp 10.0.3.12:5432: connect: connection refused",
    "kernel: Out of memory: Killed process 4821 (python) total-vm:8123456kB",
]
SQL = [
    "SELECT id, state FROM escalations WHERE next_action_at <= now() ORDER BY next_action_at "
    "LIMIT 100 FOR UPDATE SKIP LOCKED",
    "INSERT INTO events (escalation_id, kind, at) VALUES ($1, $2, $3)",
    "CREATE INDEX CONCURRENTLY ix_escalations_next_action_at ON escalations (next_action_at)",
    'ERROR: duplicate key value violates unique constraint "uq_packets_run_id_packet_id"',
    "DELETE FROM outbox WHERE sent_at < now() - interval '7 days'",
]
JSONS = [
    '{"status": "failed", "attempt": 3, "error": "timeout"}',
    '{"token_type": "bearer", "expires_in": 3600, "scope": "read"}',
    '{"kind": "log", "ref": "s3://acme-logs/run-8841/verify.log"}',
    '{"packet_id": "esc-2026-10-16-005", "run_id": "run-8842", "severity": "medium"}',
    '{"password_policy": {"min_length": 12, "require_symbols": true}}',
    '{"id": "evt_1PQ2rS3tU4vW5xY6", "type": "invoice.paid"}',
]
K8S = [
    "pod api-server-7d9f8b6c5d-x2x7k in CrashLoopBackOff",
    "replicaset.apps/worker-5c8f7b9d46 scaled to 0",
    "deployment.apps/escalation-worker rolled out",
    "Back-off restarting failed container celery-beat in pod beat-6b4d9c7f8-qz2lm",
    "configmap/escalation-policy-v3 unchanged",
    "node ip-10-0-3-12.eu-west-1.compute.internal NotReady",
    "arn:aws:iam::123456789012:role/escalation-worker",
    "arn:aws:sqs:eu-west-1:123456789012:escalations-dlq",
]
NETWORK = [
    "connect to 192.168.1.20 port 22 failed",
    "upstream 203.0.113.45:443 reset the connection",
    "listening on [::]:8000 and 2001:db8::1",
    "MAC 3c:22:fb:8a:11:0e on eth0",
]
MISC = [
    "Migrate 120 records and verify totals match source.",
    "approve deletion of 3 stale S3 buckets (acme-tmp-1, acme-tmp-2, acme-tmp-3)?",
    "cron 0 */6 * * * runs the sweeper",
    "order 1234567890123 refunded",
    "phone +44 20 7946 0958 on the on-call sheet",
    "ops@example.com is the recipient",
    "ghcr.io/acme/api:2026.05.16-3f2a1bc",
    "AbstractSingletonProxyFactoryBean",
    "retry with exponential backoff: 1s, 2s, 4s, 8s, 16s",
    "the rollout needs a human decision: resume or abort",
    "the sha256 of the tree changed between snapshot and resume",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    "stripe event evt_1PQ2rS3tU4vW5xY6 and customer cus_Q1w2E3r4T5y6U7",
    "pk_live_ keys are publishable and fine to share",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
    "Set-Cookie: theme=dark; Path=/",
    "user agent python-httpx/0.28.1",
    "x-request-id: 7f3a9c2e-1b4d-4e8f-9a6b-2c1d0e9f8a7b",
]


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, rows in (("secrets", secrets()), ("clean", clean())):
        with (OUT / f"{name}.jsonl").open("w") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")
        print(f"{name}: {len(rows)} rows")


if __name__ == "__main__":
    main()
