"""A real, throw-away Dovecot IMAP server for tests (Debian's ``dovecot-imapd``).

It runs in the foreground on free loopback ports with a generated configuration: users
from a passwd-file, Maildir mail under its own directory, a self-signed certificate for
implicit TLS and STARTTLS. Mail is delivered by IMAP APPEND, as any client would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import imapclient

from pmsearch.cli.stack import free_port

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"


@dataclass
class Dovecot:
    dir: Path
    imap_port: int
    imaps_port: int
    cert: Path
    users: dict[str, str]

    def client(self, user: str = "alice") -> imapclient.IMAPClient:
        """A plain-text admin-side client (loopback only) for delivering and moving mail."""
        c = imapclient.IMAPClient("127.0.0.1", port=self.imap_port, ssl=False, timeout=10)
        c.login(user, self.users[user])
        return c

    def deliver(self, raw: bytes, folder: str = "INBOX", user: str = "alice") -> None:
        with self.client(user) as c:
            if not c.folder_exists(folder):
                c.create_folder(folder)
            c.append(folder, raw)

    def log(self) -> str:
        path = self.dir / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _config(d: Path, imap_port: int, imaps_port: int, uid: str, gid: str, internal: str) -> str:
    return f"""
base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <{d}/cert.pem
ssl_key = <{d}/key.pem
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {internal}
default_login_user = {internal}
default_internal_group = {gid}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/users
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={d}/home/%u
}}
mail_location = maildir:~/Maildir
first_valid_uid = 1
first_valid_gid = 1
service imap-login {{
  chroot =
  inet_listener imap {{
    port = {imap_port}
  }}
  inet_listener imaps {{
    port = {imaps_port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
"""


@contextlib.contextmanager
def dovecot_server(workdir: Path, users: dict[str, str], *, timeout: float = 15.0) -> Iterator[Dovecot]:
    """Start Dovecot in ``workdir`` and yield it; stop it on exit. As root, Dovecot's
    own users must reach its files, so it runs in a fresh world-readable directory
    instead (removed on exit)."""
    root = os.getuid() == 0
    d = Path(tempfile.mkdtemp(prefix="pm-dovecot-")) if root else workdir
    for sub in ("run", "state", "home"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem"),
         "-out", str(d / "cert.pem"), "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    (d / "users").write_text("".join(f"{u}:{{PLAIN}}{p}\n" for u, p in users.items()))
    if root:
        # Dovecot refuses mail access as root: mail belongs to nobody, whose files these become.
        uid, gid, internal = "nobody", "nogroup", "dovenull"
        shutil.chown(d / "home", "nobody", "nogroup")
        os.chmod(d, 0o755)
        (d / "users").chmod(0o644)
    else:
        import grp
        import pwd

        uid = internal = pwd.getpwuid(os.getuid()).pw_name
        gid = grp.getgrgid(os.getgid()).gr_name
    imap_port, imaps_port = free_port(), free_port()
    conf = d / "dovecot.conf"
    conf.write_text(_config(d, imap_port, imaps_port, uid, gid, internal))
    proc = subprocess.Popen([DOVECOT, "-F", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server = Dovecot(d, imap_port, imaps_port, d / "cert.pem", users)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", imap_port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise RuntimeError(f"dovecot did not start: {err}{server.log()}") from None
                time.sleep(0.05)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if root:
            shutil.rmtree(d, ignore_errors=True)
