"""More FAKE secrets in real formats, generated from a seed: provider tokens, JWTs, private keys,
URL passwords and passwords in prose, each in the contexts a run's packet carries them.

Random characters in each provider's documented shape, never a real credential. Used by
make_secret_corpus.py for bench/secret_corpus/secrets.jsonl.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

Row = tuple[str, str, str]  # (category, kind, text)

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"

CONTEXTS = (
    "{s}",
    "deploy failed: {s} rejected",
    "export {name}={s}",
    '{{"{name}": "{s}"}}',
    "{name}: {s}",
    "retried with {s} and got 401",
    "Authorization: token {s}",
)


def more_secrets(seed: int) -> list[Row]:
    """Every generator's rows, in a fixed order, from one seed."""
    rng = random.Random(seed)
    rows: list[Row] = []
    for category, kind, make, count in GENERATORS:
        rows += [(category, kind, make(rng)) for _ in range(count)]
    return rows


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def in_context(rng: random.Random, secret: str, name: str) -> str:
    return rng.choice(CONTEXTS).format(s=secret, name=name)


def aws_access_key(rng: random.Random) -> str:
    key = rng.choice(("AKIA", "ASIA")) + pick(rng, UPPER_ALNUM, 16)
    return in_context(rng, key, "AWS_ACCESS_KEY_ID")


def aws_secret_key(rng: random.Random) -> str:
    key = pick(rng, B64, 40)
    return rng.choice(
        (
            f"AWS_SECRET_ACCESS_KEY={key}",
            f"aws_secret_access_key = {key}",
            f'{{"AccessKeyId": "ASIA{pick(rng, UPPER_ALNUM, 16)}", "SecretAccessKey": "{key}"}}',
        )
    )


def github_token(rng: random.Random) -> str:
    token = rng.choice(
        (
            f"{rng.choice(('ghp', 'gho', 'ghs', 'ghu', 'ghr'))}_{pick(rng, ALNUM, 36)}",
            f"github_pat_{pick(rng, ALNUM, 22)}_{pick(rng, ALNUM, 59)}",
        )
    )
    if rng.random() < 0.2:
        return f"git clone https://x-access-token:{token}@github.com/acme/api.git"
    return in_context(rng, token, "GITHUB_TOKEN")


def gitlab_token(rng: random.Random) -> str:
    prefix = rng.choice(("glpat-", "glpat-", "gldt-", "glrt-", "glptt-"))
    body = pick(rng, HEX, 40) if prefix == "glptt-" else pick(rng, URLSAFE, 20)
    return in_context(rng, prefix + body, "GITLAB_TOKEN")


def slack_token(rng: random.Random) -> str:
    digits = string.digits
    token = rng.choice(
        (
            f"xoxb-{pick(rng, digits, 12)}-{pick(rng, digits, 13)}-{pick(rng, ALNUM, 24)}",
            f"xoxp-{pick(rng, digits, 12)}-{pick(rng, digits, 12)}-{pick(rng, digits, 13)}-"
            f"{pick(rng, HEX, 32)}",
            f"xapp-1-A{pick(rng, UPPER_ALNUM, 10)}-{pick(rng, digits, 13)}-{pick(rng, HEX, 64)}",
        )
    )
    return in_context(rng, token, "SLACK_BOT_TOKEN")


def slack_webhook(rng: random.Random) -> str:
    hook = (
        f"https://hooks.slack.com/services/T{pick(rng, UPPER_ALNUM, 8)}/"
        f"B{pick(rng, UPPER_ALNUM, 10)}/{pick(rng, ALNUM, 24)}"
    )
    return rng.choice((hook, f"apprise url {hook} returned 404", f"SLACK_WEBHOOK_URL={hook}"))


def stripe_key(rng: random.Random) -> str:
    key = rng.choice(
        (
            f"sk_live_{pick(rng, ALNUM, 24)}",
            f"sk_live_51{pick(rng, ALNUM, 97)}",
            f"sk_test_{pick(rng, ALNUM, 24)}",
            f"rk_live_{pick(rng, ALNUM, 24)}",
            f"whsec_{pick(rng, ALNUM, 32)}",
        )
    )
    return in_context(rng, key, "STRIPE_SECRET_KEY")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(rng: random.Random) -> str:
    alg = rng.choice(("HS256", "RS256", "ES256"))
    header = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    claims = {"sub": f"user-{rng.randint(1, 10**6)}", "iat": 1778900000 + rng.randint(0, 10**6)}
    claims["exp"] = claims["iat"] + 3600
    token = f"{header}.{b64url(json.dumps(claims).encode())}.{b64url(rng.randbytes(32))}"
    return rng.choice(
        (
            f"Authorization header carried {token}",
            f"session cookie jwt={token}; Path=/",
            f"GET /v1/me?access={token} -> 401",
            token,
        )
    )


def private_key(rng: random.Random) -> str:
    label = rng.choice(("RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY"))
    body = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(3))
    block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
    return rng.choice(
        (
            block,
            json.dumps({"type": "service_account", "private_key": block + "\n"}),
            f"key file contents: {block.replace(chr(10), ' ')}",
        )
    )


URL_TEMPLATES = (
    "postgres://app:{pw}@db.internal:5432/app",
    "postgresql://reporting:{pw}@10.0.{n}.{n}:5432/metrics?sslmode=require",
    "mysql://root:{pw}@mysql-0.mysql:3306/shop",
    "redis://:{pw}@redis-master:6379/0",
    "rediss://default:{pw}@cache.example.net:6380/1",
    "amqp://worker:{pw}@rabbitmq:5672/prod",
    "mongodb+srv://svc:{pw}@cluster0.ab12c.mongodb.net/?retryWrites=true",
    "https://deploy:{pw}@artifacts.example.com/releases/app.tgz",
    "ftp://backup:{pw}@ftp.example.org/nightly/",
)


def url_password(rng: random.Random) -> str:
    pw = pick(rng, ALNUM, rng.randint(10, 20)) + rng.choice(("", "%21", "_9", "-x", "%40z"))
    url = rng.choice(URL_TEMPLATES).format(pw=pw, n=rng.randint(0, 255))
    return rng.choice((url, f"DATABASE_URL={url}", f"connection to {url} refused"))


PASSWORD_TEMPLATES = (
    "password={pw}",
    "the admin password is {pw}",
    "DB_PASSWORD={pw}",
    "login failed for root, password was {pw}",
    '{{"username": "svc-backup", "password": "{pw}"}}',
    "export PGPASSWORD='{pw}'",
    "new password: {pw}",
    "pwd: {pw}",
    "the password for the staging DB is {pw}",
    "REDIS_PASSWORD: {pw}",
)


def password_prose(rng: random.Random) -> str:
    word = rng.choice(("Winter", "Summer", "Blue", "Green", "Tiger", "Falcon", "River", "Maple"))
    pw = rng.choice(
        (
            f"{word}{rng.randint(10, 9999)}{rng.choice('!#$%&*?')}",
            f"{pick(rng, string.ascii_lowercase, 3)}{rng.randint(0, 9)}{word}{rng.choice('!#@')}",
            pick(rng, ALNUM + "!#%&*", rng.randint(10, 16)),
            f"{word.lower()}-{rng.choice(('moon', 'lake', 'stone'))}-{rng.randint(10, 99)}",
        )
    )
    return rng.choice(PASSWORD_TEMPLATES).format(pw=pw)


GENERATORS: list[tuple[str, str, Callable[[random.Random], str], int]] = [
    ("provider", "AWS access key", aws_access_key, 20),
    ("provider", "AWS secret key", aws_secret_key, 10),
    ("provider", "GitHub token", github_token, 20),
    ("provider", "GitLab token", gitlab_token, 10),
    ("provider", "Slack token", slack_token, 15),
    ("provider", "Slack webhook", slack_webhook, 5),
    ("provider", "Stripe key", stripe_key, 15),
    ("provider", "JSON Web Token", jwt, 15),
    ("private_key", "private key", private_key, 12),
    ("url_credentials", "URL credentials", url_password, 20),
    ("prose_password", "password", password_prose, 30),
]
