"""The build backend of samplecheck's Python package: standard library only, so `pip install ./python` needs no
package index (pyproject.toml: `requires = []`, `backend-path = ["build_backend"]`).

PEP 517 (build_wheel, build_sdist) and PEP 660 (build_editable). The wheel holds the `samplecheck` package (every
.py under python/samplecheck, never a __pycache__), its metadata read from pyproject.toml, the pytest11 entry point
and a RECORD with sha256 digests. The editable wheel holds a .pth file that puts python/ on sys.path.

The metadata is read with tomllib where it exists (Python >= 3.11) and otherwise from the few fixed lines of
pyproject.toml this backend needs (name, version, description, requires-python, the pytest11 entry point); a
pyproject.toml it cannot read raises an error that names the field.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "samplecheck"
# Reproducible archives: every member gets this time stamp (1980-01-01, the earliest a zip can hold).
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _read_project():
    path = os.path.join(_ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        text = f.read()
    try:
        import tomllib
        data = tomllib.loads(text.decode("utf-8"))
        project = data["project"]
        meta = {k: project.get(k) for k in ("name", "version", "description", "requires-python", "readme")}
        meta["entry_points"] = project.get("entry-points", {})
        meta["optional"] = project.get("optional-dependencies", {})
    except ImportError:
        meta = _read_project_by_lines(text.decode("utf-8"))
    for key in ("name", "version"):
        if not meta.get(key):
            raise ValueError("%s: [project] %s is missing; it is required" % (path, key))
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", meta["version"]):
        raise ValueError("%s: [project] version = %r is not a release version (digits and dots)"
                         % (path, meta["version"]))
    return meta


def _read_project_by_lines(text):
    """Python < 3.11: the `key = "string"` and `key = ["string", ...]` lines of [project] and of its entry-point
    and optional-dependency tables (all this backend reads)."""
    meta = {"entry_points": {}, "optional": {}}
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        header = re.fullmatch(r"\[([^\]]+)\]\s*(#.*)?", line)
        if header:
            section = header.group(1).strip()
            continue
        pair = re.match(r'("?)([A-Za-z0-9_.-]+)\1\s*=\s*(.*)', line)
        if not pair or section is None:
            continue
        key, value = pair.group(2), pair.group(3)
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
        if section == "project" and value.startswith('"') and strings:
            meta[key] = strings[0]
        elif section.startswith("project.entry-points.") and strings:
            group = section[len("project.entry-points."):].strip('"')
            meta["entry_points"].setdefault(group, {})[key] = strings[0]
        elif section == "project.optional-dependencies":
            meta["optional"][key] = strings
    return meta


def _dist(meta):
    return "%s-%s" % (meta["name"].replace("-", "_"), meta["version"])


def _metadata(meta):
    lines = ["Metadata-Version: 2.1", "Name: %s" % meta["name"], "Version: %s" % meta["version"]]
    if meta.get("description"):
        lines.append("Summary: %s" % meta["description"])
    if meta.get("requires-python"):
        lines.append("Requires-Python: %s" % meta["requires-python"])
    for extra, requirements in sorted(meta.get("optional", {}).items()):
        lines.append("Provides-Extra: %s" % extra)
        for requirement in requirements:
            lines.append('Requires-Dist: %s; extra == "%s"' % (requirement, extra))
    body = ""
    readme = meta.get("readme")
    if isinstance(readme, str) and os.path.isfile(os.path.join(_ROOT, readme)):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(_ROOT, readme), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _entry_points(meta):
    out = []
    for group, entries in sorted(meta.get("entry_points", {}).items()):
        out.append("[%s]" % group)
        out.extend("%s = %s" % (name, target) for name, target in sorted(entries.items()))
    return "\n".join(out) + "\n" if out else ""


def _package_files():
    """(archive name, path on disk) of every .py of the package, sorted; no caches, no compiled files."""
    top = os.path.join(_ROOT, _PACKAGE)
    if not os.path.isfile(os.path.join(top, "__init__.py")):
        raise FileNotFoundError("%s: the package folder has no __init__.py" % top)
    files = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                files.append((os.path.relpath(path, _ROOT).replace(os.sep, "/"), path))
    return files


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _write_wheel(directory, meta, members):
    """members: (archive name, bytes) in order; adds the dist-info files and RECORD; returns the wheel's name."""
    dist = _dist(meta)
    info = dist + ".dist-info"
    members = list(members) + [
        (info + "/METADATA", _metadata(meta).encode("utf-8")),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: samplecheck_build\nRoot-Is-Purelib: true\n"
                          b"Tag: py3-none-any\n"),
    ]
    entry = _entry_points(meta)
    if entry:
        members.append((info + "/entry_points.txt", entry.encode("utf-8")))
    record = "".join("%s,%s,%d\n" % (name, _digest(data), len(data)) for name, data in members)
    record += info + "/RECORD,,\n"
    members.append((info + "/RECORD", record.encode("utf-8")))
    wheel = dist + "-py3-none-any.whl"
    os.makedirs(directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            entry_info = zipfile.ZipInfo(name, _EPOCH)
            entry_info.external_attr = 0o644 << 16
            entry_info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry_info, data)
    return wheel


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# --- PEP 517 ---

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    meta = _read_project()
    return _write_wheel(wheel_directory, meta, [(name, _read(path)) for name, path in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a wheel whose .pth file puts this clone's python/ folder on sys.path."""
    meta = _read_project()
    pth = (_ROOT + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, meta, [("__editable__.%s.pth" % _dist(meta), pth)])


def build_sdist(sdist_directory, config_settings=None):
    meta = _read_project()
    dist = _dist(meta)
    members = [("pyproject.toml", os.path.join(_ROOT, "pyproject.toml")),
               ("build_backend/samplecheck_build.py", os.path.abspath(__file__))]
    readme = meta.get("readme")
    if isinstance(readme, str) and os.path.isfile(os.path.join(_ROOT, readme)):
        members.append((readme, os.path.join(_ROOT, readme)))
    members += _package_files()
    pkg_info = _metadata(meta).encode("utf-8")
    name = dist + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for arcname, data in [("PKG-INFO", pkg_info)] + [(a, _read(p)) for a, p in members]:
            member = tarfile.TarInfo("%s/%s" % (dist, arcname))
            member.size, member.mode, member.mtime = len(data), 0o644, 315532800
            tar.addfile(member, io.BytesIO(data))
    return name
