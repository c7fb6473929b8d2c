#!/usr/bin/env python3
"""Makes every key, certificate and credential the authentication tests (tests/auth_test.cpp) use.

    tests/auth/make_auth_fixtures.py OUT_DIR

Needs only Python 3's standard library and the `openssl` command (Debian's openssl 3.0). No `nsc`
or `nk`: NKeys and NATS JWTs are made here from their published formats, with openssl doing the
ed25519 arithmetic. Every run makes fresh random keys, so nothing secret is kept in the repository
and no certificate can expire in it. The test runs this script into its own temp dir; see
tests/auth/README.md for what each file is.

Formats (as nats-server 2.9 and cnats 3.4 read them):
  NKey public key: base32 (RFC 4648, no padding) of  prefix byte + 32-byte ed25519 public key +
                   CRC16 of those 33 bytes, little-endian.  Prefix: user 'U' 20<<3, account 'A' 0,
                   operator 'O' 14<<3.  56 characters, starting with the type's letter.
  NKey seed:       base32 of  two prefix bytes + 32-byte ed25519 seed + CRC16, little-endian. The
                   two bytes put 'S' (18<<3) in the first 5 bits and the key type's prefix in the
                   next 5, so a user seed starts "SU", an account seed "SA", an operator seed "SO".
  CRC16:           CRC-16/XMODEM: polynomial 0x1021, initial value 0, no reflection, no final xor.
  NATS JWT:        base64url(header) "." base64url(claims) "." base64url(ed25519 signature of the
                   first two parts, by the issuer's key); no padding. header is
                   {"typ":"JWT","alg":"ed25519-nkey"}. claims: jti, iat, iss (issuer's public
                   NKey), sub (subject's public NKey), name, and "nats" with the type's fields.
                   jti is base32 of SHA-512/256 of the claims serialized without a jti.
  creds file:      the user's JWT and the user's NKey seed between BEGIN/END marker lines.
"""

import base64
import hashlib
import json
import os
import pathlib
import secrets
import subprocess
import sys
import tempfile
import time

# --- NKeys -----------------------------------------------------------------------------------

PREFIX_SEED = 18 << 3      # 'S'
PREFIX_OPERATOR = 14 << 3  # 'O'
PREFIX_ACCOUNT = 0         # 'A'
PREFIX_USER = 20 << 3      # 'U'

# PKCS#8 DER header of an ed25519 private key: SEQUENCE { version 0, AlgorithmIdentifier
# { 1.3.101.112 }, OCTET STRING { OCTET STRING (32 bytes) } }; the 32-byte seed follows it.
ED25519_PKCS8_PREFIX = bytes.fromhex("302e020100300506032b657004220420")


def crc16_xmodem(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def base32(data: bytes) -> str:
    return base64.b32encode(data).decode().rstrip("=")


def with_crc(body: bytes) -> str:
    return base32(body + crc16_xmodem(body).to_bytes(2, "little"))


class NKey:
    """An ed25519 key pair of one NKey type. openssl does the signing; the seed never leaves
    `workdir` (a private temp dir) except through seed_text()."""

    def __init__(self, prefix: int, workdir: pathlib.Path, name: str):
        self.prefix = prefix
        self.seed = secrets.token_bytes(32)
        self.key_file = workdir / f"{name}.der"
        self.key_file.write_bytes(ED25519_PKCS8_PREFIX + self.seed)
        self.key_file.chmod(0o600)
        public_der = openssl("pkey", "-inform", "DER", "-in", str(self.key_file), "-pubout", "-outform", "DER")
        self.public_raw = public_der[-32:]  # SubjectPublicKeyInfo: 12-byte header, then the key
        self.workdir = workdir

    def public_key(self) -> str:
        return with_crc(bytes([self.prefix]) + self.public_raw)

    def seed_text(self) -> str:
        first = PREFIX_SEED | (self.prefix >> 5)
        second = (self.prefix & 0x1F) << 3
        return with_crc(bytes([first, second]) + self.seed)

    def sign(self, message: bytes) -> bytes:
        message_file = self.workdir / "message.bin"
        message_file.write_bytes(message)
        # ed25519 signs the message itself, not a digest: hence -rawin.
        return openssl("pkeyutl", "-sign", "-rawin", "-inkey", str(self.key_file), "-keyform", "DER",
                       "-in", str(message_file))


# --- JWTs ------------------------------------------------------------------------------------

UNLIMITED = -1


def base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def compact_json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def encode_jwt(issuer: NKey, subject: str, name: str, nats: dict) -> str:
    claims = {"iat": int(time.time()), "iss": issuer.public_key(), "name": name, "sub": subject, "nats": nats}
    claims["jti"] = base32(hashlib.new("sha512_256", compact_json(claims)).digest())
    header = base64url(compact_json({"typ": "JWT", "alg": "ed25519-nkey"}))
    signed = header + "." + base64url(compact_json(claims))
    return signed + "." + base64url(issuer.sign(signed.encode()))


def operator_jwt(operator: NKey, system_account: NKey) -> str:
    return encode_jwt(operator, operator.public_key(), "jetfan-test-operator",
                      {"type": "operator", "version": 2, "system_account": system_account.public_key()})


def account_jwt(operator: NKey, account: NKey, name: str, jetstream: bool) -> str:
    limits = {"subs": UNLIMITED, "data": UNLIMITED, "payload": UNLIMITED, "imports": UNLIMITED,
              "exports": UNLIMITED, "wildcards": True, "conn": UNLIMITED, "leaf": UNLIMITED}
    if jetstream:
        # Non-zero storage limits are what turn JetStream on for an account in operator mode.
        limits.update({"mem_storage": UNLIMITED, "disk_storage": UNLIMITED, "streams": UNLIMITED,
                       "consumer": UNLIMITED})
    return encode_jwt(operator, account.public_key(), name,
                      {"limits": limits, "default_permissions": {"pub": {}, "sub": {}}, "type": "account",
                       "version": 2})


def user_jwt(account: NKey, user: NKey, name: str) -> str:
    return encode_jwt(account, user.public_key(), name,
                      {"pub": {}, "sub": {}, "subs": UNLIMITED, "data": UNLIMITED, "payload": UNLIMITED,
                       "type": "user", "version": 2})


def creds_text(jwt: str, user: NKey) -> str:
    return ("-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n\n"
            "-----BEGIN USER NKEY SEED-----\n" + user.seed_text() + "\n------END USER NKEY SEED------\n\n"
            "*************************************************************\n")


# --- TLS -------------------------------------------------------------------------------------

def openssl(*args: str) -> bytes:
    result = subprocess.run(["openssl", *args], capture_output=True)
    if result.returncode != 0:
        sys.exit(f"openssl {' '.join(args)} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


def make_certificate(out: pathlib.Path, name: str, subject: str, extensions: str, issuer: str | None, workdir):
    """out/NAME.pem and out/NAME.key (P-256). Self-signed when issuer is None, else signed by
    out/ISSUER.pem with out/ISSUER.key. Valid for 30 days from now."""
    key, cert = out / f"{name}.key", out / f"{name}.pem"
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key))
    key.chmod(0o600)
    # A config of our own, so that the system's openssl.cnf adds no extensions of its own.
    config = workdir / "req.cnf"
    config.write_text("[req]\ndistinguished_name = dn\n[dn]\n[ext]\n" + extensions + "\n")
    request = workdir / f"{name}.csr"
    openssl("req", "-new", "-config", str(config), "-key", str(key), "-subj", subject, "-out", str(request))
    signing = ["-signkey", str(key)] if issuer is None else \
              ["-CA", str(out / f"{issuer}.pem"), "-CAkey", str(out / f"{issuer}.key"),
               "-set_serial", str(secrets.randbits(63))]
    openssl("x509", "-req", "-in", str(request), "-days", "30", "-extfile", str(config), "-extensions", "ext",
            *signing, "-out", str(cert))


CA_EXTENSIONS = "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\n" \
                "subjectKeyIdentifier = hash"
SERVER_EXTENSIONS = "basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature\n" \
                    "extendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1, DNS:localhost"
CLIENT_EXTENSIONS = "basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature\n" \
                    "extendedKeyUsage = clientAuth"


# --- the fixture set -------------------------------------------------------------------------

def write_secret(path: pathlib.Path, text: str):
    # Created 0600 from the start: the tests check that jetfan warns about looser modes.
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
        file.write(text)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_auth_fixtures.py OUT_DIR")
    out = pathlib.Path(sys.argv[1]).resolve()
    for folder in ("tls", "nkey", "jwt"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    manifest = {}
    with tempfile.TemporaryDirectory() as scratch:
        workdir = pathlib.Path(scratch)

        tls = out / "tls"
        make_certificate(tls, "ca", "/CN=jetfan test CA", CA_EXTENSIONS, None, workdir)
        make_certificate(tls, "server", "/CN=localhost", SERVER_EXTENSIONS, "ca", workdir)
        make_certificate(tls, "client", "/CN=jetfan", CLIENT_EXTENSIONS, "ca", workdir)
        # A second CA the server does not trust, and a client certificate it signed.
        make_certificate(tls, "other-ca", "/CN=some other CA", CA_EXTENSIONS, None, workdir)
        make_certificate(tls, "other-client", "/CN=jetfan", CLIENT_EXTENSIONS, "other-ca", workdir)

        # Plain NKey users: the server lists "user" by its public key; "stranger" it does not know.
        for name in ("user", "stranger"):
            key = NKey(PREFIX_USER, workdir, "nkey-" + name)
            write_secret(out / "nkey" / f"{name}.seed", key.seed_text() + "\n")
            (out / "nkey" / f"{name}.pub").write_text(key.public_key() + "\n")
            manifest[f"nkey_{name}"] = key.public_key()

        # Decentralized auth: operator -> accounts -> users. The server trusts the operator and
        # has the account JWTs preloaded (resolver: MEMORY). "stranger" is an account the server
        # was never told about, so its user's JWT does not chain to anything the server knows.
        operator = NKey(PREFIX_OPERATOR, workdir, "operator")
        system = NKey(PREFIX_ACCOUNT, workdir, "system")
        account = NKey(PREFIX_ACCOUNT, workdir, "account")
        stranger_account = NKey(PREFIX_ACCOUNT, workdir, "stranger-account")
        jwt_dir = out / "jwt"
        (jwt_dir / "operator.jwt").write_text(operator_jwt(operator, system) + "\n")
        manifest["operator_jwt_file"] = str(jwt_dir / "operator.jwt")
        manifest["system_account"] = system.public_key()
        manifest["system_account_jwt"] = account_jwt(operator, system, "SYS", jetstream=False)
        manifest["account"] = account.public_key()
        manifest["account_jwt"] = account_jwt(operator, account, "MESH", jetstream=True)
        for name, issuer in (("jetfan", account), ("controller", account), ("stranger", stranger_account)):
            user = NKey(PREFIX_USER, workdir, "jwt-" + name)
            write_secret(jwt_dir / f"{name}.creds", creds_text(user_jwt(issuer, user, name), user))
            manifest[f"creds_{name}_user"] = user.public_key()

    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
