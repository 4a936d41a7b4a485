"""A damaged torch archive is named by the file and the part that fails its checksum, as the user knows them."""

from __future__ import annotations

import zipfile

import pytest
import torch

from sequifier.config.errors import UserError
from sequifier.data.safe_load import load_weights_only


def test_a_flipped_byte_names_the_part_without_the_name_the_archive_was_written_under(tmp_path):
    written = tmp_path / ".model.pt.host.123.abcdef.tmp"
    torch.save({"weight": torch.arange(4096, dtype=torch.float32)}, written)
    path = tmp_path / "model.pt"
    written.rename(path)
    content = bytearray(path.read_bytes())
    offset = content.index(torch.arange(4096, dtype=torch.float32).numpy().tobytes()[:64]) + 100
    content[offset] ^= 0xFF
    path.write_bytes(bytes(content))
    with pytest.raises(UserError) as error:
        load_weights_only(path, "model")
    assert error.value.where == str(path)
    assert "its part 'data/0' fails its checksum" in error.value.problem and ".tmp" not in error.value.problem


@pytest.mark.parametrize("content", [b"hello\n", b"\x80\x02}q\x00."])
def test_a_file_that_is_no_pytorch_archive_says_so(tmp_path, content):
    path = tmp_path / "h.pt"
    path.write_bytes(content)
    with pytest.raises(UserError) as caught:
        load_weights_only(path, "checkpoint")
    assert caught.value.where == str(path) and caught.value.problem.startswith("not a readable checkpoint: ")
    assert "(101)" not in caught.value.problem


def test_a_file_gone_since_it_was_listed_is_named_as_missing(tmp_path):
    with pytest.raises(UserError) as caught:
        load_weights_only(tmp_path / "gone.pt", "PT shard")
    assert caught.value.where == str(tmp_path / "gone.pt")
    assert caught.value.problem == "cannot read this PT shard: No such file or directory"


def test_a_zip_archive_that_torch_save_did_not_write_says_so(tmp_path):
    path = tmp_path / "m.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", b"junk")
    with pytest.raises(UserError) as caught:
        load_weights_only(path, "PT bundle")
    assert (
        caught.value.problem
        == "not a readable PT bundle: a zip archive, but not one torch.save wrote (no version record)"
    )
