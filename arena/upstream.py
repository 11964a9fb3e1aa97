"""The inference gateway's way out: an upstream URL checked, its host resolved and guarded, one bounded POST.

A miner names its model's endpoint (an OpenAI-compatible base URL); the validator must not
become its client for anything else. So the URL is plain (http or https, a host, no
credentials, query or fragment), its host is resolved once, every address it resolves to must
pass the outbound guard (``arena.httpguard.address_refusal``: global addresses, unless the
operator allows networks), and the connection goes to the address that was checked (the host
named in ``Host`` and, for https, in SNI and the certificate check), so a name cannot resolve
to a public address for the check and a private one for the connection. No redirect is
followed, no proxy from the environment is used, no connection is reused (two names on one
address never share a TLS session), and the answer is read up to a byte cap within a time cap.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from arena.httpguard import AddressPolicy, address_refusal

MAX_UPSTREAM_CHARS = 2048
COMPLETIONS = "/chat/completions"


class UpstreamProblem(Exception):
    """Why a request could not be forwarded, or the upstream's answer cannot be served.

    Attributes:
        code: a short code the agent reads (``upstream_refused``, ``upstream_timeout``...).
        status: the HTTP status the gateway answers with.
        detail: one line for the agent (never a key).
        body: the upstream's (bounded) answer where it sent one.
    """

    def __init__(self, code: str, status: int, detail: str, body: bytes = b"") -> None:
        super().__init__(detail)
        self.code, self.status, self.detail, self.body = code, status, detail, body


@dataclass(frozen=True)
class Upstream:
    """A checked upstream: its base URL as named (for the log), and where to connect."""

    named: str
    scheme: str
    host: str
    port: int
    path: str

    @property
    def host_header(self) -> str:
        """The ``Host`` header: the name as given, with its port when it is not the scheme's default."""
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def parse_upstream(url: str) -> Upstream:
    """Check an upstream base URL's form (not yet its address).

    Raises:
        UpstreamProblem: ``upstream_invalid`` (400): not an http(s) URL with a host, or one
            carrying credentials, a query or a fragment (a key belongs in the key header).
    """
    if len(url) > MAX_UPSTREAM_CHARS:
        raise UpstreamProblem(
            "upstream_invalid", 400, f"the upstream URL is over {MAX_UPSTREAM_CHARS} characters"
        )
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise UpstreamProblem("upstream_invalid", 400, "the upstream is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamProblem("upstream_invalid", 400, "the upstream must be an absolute http(s) URL")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise UpstreamProblem(
            "upstream_invalid", 400, "the upstream URL must not carry credentials, a query or a fragment"
        )
    path = parts.path.rstrip("/")
    named = f"{parts.scheme}://{parts.netloc}{path}"
    default = 443 if parts.scheme == "https" else 80
    return Upstream(named=named, scheme=parts.scheme, host=parts.hostname, port=port or default, path=path)


async def resolve_guarded(upstream: Upstream, policy: AddressPolicy) -> str:
    """The address to connect to: the host resolved, every address it resolves to allowed by ``policy``.

    Raises:
        UpstreamProblem: ``upstream_refused`` (403): an address the guard refuses (loopback,
            private, link-local... unless allowed); ``upstream_unresolvable`` (502): no address.
    """
    try:
        literal = ipaddress.ip_address(upstream.host)
        addresses = [str(literal)]
    except ValueError:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                upstream.host, upstream.port, type=socket.SOCK_STREAM
            )
        except (OSError, UnicodeError):
            raise UpstreamProblem(
                "upstream_unresolvable", 502, "the upstream's host does not resolve"
            ) from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UpstreamProblem("upstream_unresolvable", 502, "the upstream's host does not resolve")
    for address in addresses:
        if (cause := address_refusal(address, policy)) is not None:
            raise UpstreamProblem(
                "upstream_refused",
                403,
                f"the upstream resolves to a {cause} address, which this validator refuses",
            )
    return addresses[0]


def make_client() -> httpx.AsyncClient:
    """The gateway's HTTP client: no environment proxies, no redirects, no connection reuse."""
    return httpx.AsyncClient(
        trust_env=False,
        follow_redirects=False,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


async def post_completion(
    client: httpx.AsyncClient,
    upstream: Upstream,
    address: str,
    body: bytes,
    *,
    key: str | None,
    max_response_bytes: int,
    timeout_s: float,
) -> bytes:
    """POST ``body`` to the upstream's ``/chat/completions`` at ``address``; the answer's bytes.

    Raises:
        UpstreamProblem: ``upstream_timeout`` (504), ``upstream_unreachable`` (502),
            ``response_too_large`` (502), ``upstream_status`` (502: the upstream answered
            other than 2xx; its bounded body rides along).
    """
    host = f"[{address}]" if ":" in address else address
    url = f"{upstream.scheme}://{host}:{upstream.port}{upstream.path}{COMPLETIONS}"
    headers = {"Host": upstream.host_header, "Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    extensions = {"sni_hostname": upstream.host} if upstream.scheme == "https" else {}
    try:
        async with asyncio.timeout(timeout_s):
            request = client.build_request(
                "POST", url, content=body, headers=headers, extensions=extensions, timeout=timeout_s
            )
            response = await client.send(request, stream=True)
            try:
                data = await _read_within(response, max_response_bytes)
            finally:
                await response.aclose()
    except (TimeoutError, httpx.TimeoutException):
        raise UpstreamProblem(
            "upstream_timeout", 504, f"the upstream did not answer within {timeout_s:g} s"
        ) from None
    except httpx.HTTPError as exc:
        raise UpstreamProblem(
            "upstream_unreachable", 502, f"the upstream is unreachable ({type(exc).__name__})"
        ) from None
    if not 200 <= response.status_code < 300:
        raise UpstreamProblem(
            "upstream_status", 502, f"the upstream answered {response.status_code}", body=data
        )
    return data


async def _read_within(response: httpx.Response, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise UpstreamProblem(
                "response_too_large", 502, f"the upstream's answer is over {max_bytes} bytes"
            )
        chunks.append(chunk)
    return b"".join(chunks)
