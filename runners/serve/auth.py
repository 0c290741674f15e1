"""Who is calling: API keys from KEYS.yaml, optional JWT bearer tokens, per-key rate limits,
and the per-address limit on failed authentications (:class:`AuthFailureLimiter`).

A caller's access groups come from its credential only: the key's entry in KEYS.yaml, or the
``groups`` claim of a verified JWT. Request bodies never carry groups.

KEYS.yaml::

    keys:
      - key: "a-long-random-string"
        name: alice
        groups: [staff, netops]
        rate_limit: "120/minute"      # optional; default: vdgr serve --rate-limit
"""
from __future__ import annotations

import hashlib
import hmac
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schemas.errors import ConfigError
from vdgr_core.store.filters import validate_group


class AuthError(Exception):
    """Missing, unknown or invalid credential (HTTP 401)."""


class RateLimited(Exception):
    """The caller's rate limit is spent (HTTP 429); ``retry_after`` in seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: a name for logs and limits, and its access groups."""

    name: str
    groups: tuple[str, ...]
    rate_limit: Optional[str] = None
    via: Literal["key", "jwt"] = "key"

    @property
    def limit_key(self) -> str:
        return f"{self.via}:{self.name}"


def _check_limit(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    from limits import parse

    try:
        parse(value)
    except ValueError as exc:
        raise ValueError(f"rate limit {value!r} is not like '120/minute': {exc}") from None
    return value


class ApiKey(BaseModel):
    """One entry of KEYS.yaml."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str = Field(min_length=16, repr=False)
    name: str = Field(min_length=1, max_length=128)
    groups: tuple[str, ...] = ()
    rate_limit: Optional[str] = None

    @field_validator("groups")
    @classmethod
    def _groups(cls, v):
        try:
            return tuple(validate_group(g) for g in v)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    _limit = field_validator("rate_limit")(classmethod(lambda cls, v: _check_limit(v)))


class KeysFile(BaseModel):
    """KEYS.yaml: ``keys: [{key, name, groups, rate_limit?}]``; names and keys are unique."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    keys: tuple[ApiKey, ...]

    @field_validator("keys")
    @classmethod
    def _unique(cls, v):
        if len({k.key for k in v}) != len(v) or len({k.name for k in v}) != len(v):
            raise ValueError("every key and every name must be unique")
        return v


def load_keys(path: str) -> KeysFile:
    """Read and validate KEYS.yaml.

    Raises
    ------
    schemas.errors.ConfigError
        Unreadable file or invalid content (the message names the problem, never a key).
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
        return KeysFile.model_validate(data or {})
    except OSError as exc:
        raise ConfigError(f"cannot read keys file {path!r}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"keys file {path!r} is not YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"keys file {path!r} is invalid: {problems}") from None


class JWTSettings(BaseModel):
    """Optional JWT bearer tokens: HS256 with a shared secret or RS256 with a public key."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    algorithm: Literal["HS256", "RS256"]
    key: str = Field(min_length=1, repr=False)     # the secret (HS256) or PEM public key (RS256)
    audience: Optional[str] = None
    issuer: Optional[str] = None
    groups_claim: str = "groups"


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


class Authenticator:
    """Resolves an ``Authorization`` header to a :class:`Caller`.

    Parameters
    ----------
    keys : KeysFile
    jwt : JWTSettings, optional
        When set, a bearer value that is not a known key and looks like a JWT is verified.
    """

    def __init__(self, keys: KeysFile, jwt: Optional[JWTSettings] = None):
        # looked up by digest, compared in constant time: no timing hints about stored keys
        self._keys = {_digest(k.key): k for k in keys.keys}
        self._jwt = jwt

    def authenticate(self, authorization: Optional[str]) -> Caller:
        """The caller of a request.

        Raises
        ------
        AuthError
            No ``Bearer`` credential, an unknown key, or an invalid token.
        """
        if not authorization:
            raise AuthError("missing credential: send 'Authorization: Bearer <key>'")
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value:
            raise AuthError("the Authorization header must be 'Bearer <key>'")
        d = _digest(value)
        entry = self._keys.get(d)
        if entry is not None and hmac.compare_digest(_digest(entry.key), d):
            return Caller(entry.name, entry.groups, entry.rate_limit, "key")
        if self._jwt is not None and value.count(".") == 2:
            return self._verify_jwt(value)
        raise AuthError("unknown credential")

    def _verify_jwt(self, token: str) -> Caller:
        import jwt

        s = self._jwt
        try:
            claims = jwt.decode(token, s.key, algorithms=[s.algorithm], audience=s.audience,
                                issuer=s.issuer, options={"require": ["exp", "sub"]})
        except jwt.PyJWTError as exc:
            raise AuthError(f"invalid token: {exc}") from None
        raw = claims.get(s.groups_claim, [])
        if not isinstance(raw, list) or not all(isinstance(g, str) for g in raw):
            raise AuthError(f"invalid token: claim {s.groups_claim!r} must be a list of strings")
        try:
            groups = tuple(validate_group(g) for g in raw)
        except ConfigError as exc:
            raise AuthError(f"invalid token: {exc}") from None
        return Caller(str(claims["sub"]), groups, None, "jwt")


class RateLimiter:
    """Per-caller moving-window limits (the ``limits`` package, in memory)."""

    def __init__(self, default: str):
        from limits import parse
        from limits.storage import MemoryStorage
        from limits.strategies import MovingWindowRateLimiter

        self._parse = parse
        self._default = parse(_check_limit(default))
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._items: dict[str, object] = {}

    def hit(self, caller: Caller) -> None:
        """Count one request of ``caller``.

        Raises
        ------
        RateLimited
            When the caller's limit is spent in the current window.
        """
        item = self._default
        if caller.rate_limit:
            item = self._items.get(caller.rate_limit) or self._items.setdefault(
                caller.rate_limit, self._parse(caller.rate_limit))
        if not self._limiter.hit(item, caller.limit_key):
            reset = self._limiter.get_window_stats(item, caller.limit_key).reset_time
            retry = max(1, math.ceil(reset - time.time()))
            raise RateLimited(f"rate limit {item} exceeded for {caller.name!r}", retry)


class AuthFailureLimiter:
    """Failed authentications per client address: a token bucket per address.

    Each address may fail ``per_minute`` times in a burst; the budget refills at ``per_minute``
    per 60 seconds. While an address's bucket holds less than one token, its requests that
    present a credential are refused with 429 *before* the credential is checked, so a client
    guessing keys learns nothing more until the budget refills. A request without any
    credential is neither counted nor refused (it guesses nothing).

    Parameters
    ----------
    per_minute : int
        The budget; 0 turns the limit off.
    clock : callable, optional
        Seconds, monotonic (``time.monotonic``); tests inject their own.
    max_clients : int
        Addresses tracked at most; beyond it, refilled buckets and then the oldest are dropped.
    """

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic, max_clients: int = 100_000):
        if per_minute < 0:
            raise ValueError("--auth-failures-per-minute must be 0 (off) or more")
        self.per_minute = per_minute
        self._rate = per_minute / 60.0
        self._clock = clock
        self._max = max_clients
        self._buckets: "OrderedDict[str, tuple[float, float]]" = OrderedDict()   # address -> (tokens, at)
        self._lock = threading.Lock()

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (float(self.per_minute), now))
        return min(float(self.per_minute), tokens + (now - at) * self._rate)

    def check(self, client: str) -> None:
        """Refuse ``client`` while its budget is spent.

        Raises
        ------
        RateLimited
            Less than one failure left; ``retry_after`` is when the next one is.
        """
        if not self.per_minute:
            return
        with self._lock:
            tokens = self._tokens(client, self._clock())
        if tokens < 1.0:
            retry = max(1, math.ceil((1.0 - tokens) / self._rate))
            raise RateLimited(f"too many failed authentications from this address (limit "
                              f"{self.per_minute} a minute, --auth-failures-per-minute); retry in {retry} s", retry)

    def failed(self, client: str) -> None:
        """Count one failed authentication of ``client``."""
        if not self.per_minute:
            return
        with self._lock:
            now = self._clock()
            self._buckets[client] = (max(0.0, self._tokens(client, now) - 1.0), now)
            self._buckets.move_to_end(client)
            if len(self._buckets) > self._max:
                self._prune(now)

    def _prune(self, now: float) -> None:
        for client in [c for c in self._buckets if self._tokens(c, now) >= self.per_minute]:
            del self._buckets[client]
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)
