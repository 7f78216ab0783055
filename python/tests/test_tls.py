"""HTTPS: the client against a dgserver with tls.cert_file and tls.key_file."""

from __future__ import annotations

import datetime
import ipaddress
import os
import pickle
import subprocess
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import dgenv
from dgenv.errors import ServerUnavailable

TOKEN = "s3cret"


def _self_signed(dir: Path) -> tuple[Path, Path]:
    """A fresh self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dgserver test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = dir / "cert.pem", dir / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A dgserver speaking HTTPS on a free loopback port, with a token: its URL and certificate."""
    cert_file, key_file = _self_signed(tmp_path_factory.mktemp("tls"))
    env = dict(os.environ, DGSERVER_TLS_CERT_FILE=str(cert_file), DGSERVER_TLS_KEY_FILE=str(key_file),
               DGSERVER_AUTH_TOKEN=TOKEN)
    p = subprocess.Popen([str(dgenv.find_server()), "--addr", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert p.stdout is not None
        line = p.stdout.readline().strip()
        assert line.startswith("listening on https://"), line
        yield line.split()[-1], cert_file
    finally:
        p.terminate()
        p.wait(timeout=30)


def test_client_plays_over_https_trusting_the_ca_file(tls_server: tuple[str, Path]) -> None:
    url, cert = tls_server
    client = dgenv.connect(url, token=TOKEN, ca_file=str(cert))
    env = client.make(num_envs=2, seed=1, opponent="random")
    b = env.reset(seed=1)
    b = env.step(b.mask.argmax(axis=1))
    assert b.obs.shape[0] == 2 and np.all(b.mask.any(axis=1) | b.done)
    env.close()
    copy = pickle.loads(pickle.dumps(client))  # a copy keeps the CA file
    assert copy.ca_file == str(cert) and copy.healthy()


def test_client_refuses_a_certificate_it_does_not_trust(tls_server: tuple[str, Path]) -> None:
    url, _ = tls_server
    with pytest.raises(ServerUnavailable, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        dgenv.connect(url, token=TOKEN, retry_timeout=0)


def test_ca_file_is_for_https_only() -> None:
    with pytest.raises(ValueError, match="ca_file"):
        dgenv.connect("http://127.0.0.1:1", ca_file="cert.pem")
