"""The program caches of cudacore_rs.utils: bytes mappings keyed by str or bytes."""

import os
import subprocess
import sys

import pytest
from test_program import minimal_cubin

from cudacore_rs import CUDAError, ObjectCode
from cudacore_rs.utils import FileStreamProgramCache, InMemoryProgramCache


@pytest.fixture(params=["memory", "file"])
def cache(request, tmp_path):
    if request.param == "memory":
        return InMemoryProgramCache()
    return FileStreamProgramCache(str(tmp_path / "programs"))


@pytest.mark.nodriver
def test_a_miss_a_hit_and_the_keys(cache):
    assert cache.get("k") is None
    assert cache.get("k", b"default") == b"default"
    with pytest.raises(KeyError) as missing:
        cache["k"]
    assert missing.value.args == ("k",)
    assert "k" not in cache and len(cache) == 0
    cache["k"] = b"compiled"
    got = cache["k"]
    assert type(got) is bytes and got == b"compiled"
    # A str key is its UTF-8 bytes: one entry.
    assert cache[b"k"] == b"compiled" and cache.get(bytearray(b"k")) == b"compiled"
    assert "k" in cache and b"k" in cache and len(cache) == 1
    cache["k"] = bytearray(b"replaced")
    assert cache["k"] == b"replaced" and len(cache) == 1
    cache["é"] = memoryview(b"view")
    assert cache["é".encode()] == b"view" and len(cache) == 2
    del cache["k"]
    assert "k" not in cache and len(cache) == 1
    with pytest.raises(KeyError):
        del cache["k"]
    cache.update({"a": b"1", "b": b"2"})
    cache.update([("c", b"3")])
    assert [cache[k] for k in "abc"] == [b"1", b"2", b"3"]
    cache.clear()
    assert len(cache) == 0 and cache.get("a") is None


@pytest.mark.nodriver
def test_keys_and_values_of_other_types_are_refused(cache):
    with pytest.raises(TypeError, match="keys"):
        cache[1] = b"x"
    with pytest.raises(TypeError, match="keys"):
        cache.get(None)
    with pytest.raises(TypeError, match="values"):
        cache["k"] = "text"
    with pytest.raises(TypeError, match="values"):
        cache["k"] = 12
    assert len(cache) == 0


@pytest.mark.standin
def test_object_code_goes_in_and_its_bytes_load_again(cache):
    image = minimal_cubin()
    with cache:
        cache["saxpy_sm_90"] = ObjectCode.from_cubin(image)
        data = cache.get("saxpy_sm_90")
        assert data == image
        kernel = ObjectCode.from_cubin(cache.get("saxpy_sm_90")).get_kernel("k4")
        assert kernel.num_arguments == 4


@pytest.mark.nodriver
def test_in_memory_evicts_the_least_recently_used():
    cache = InMemoryProgramCache(max_size_bytes=10)
    assert cache.max_size_bytes == 10
    cache["a"] = b"aaaa"
    cache["b"] = b"bbbb"
    assert cache["a"] == b"aaaa"  # a use: b is now the least recently used
    cache["c"] = b"cccc"
    assert "b" not in cache and "a" in cache and "c" in cache
    assert cache.size_bytes == 8
    cache["big"] = b"x" * 11  # larger than the bound: not kept
    assert "big" not in cache
    assert InMemoryProgramCache().max_size_bytes is None


@pytest.mark.nodriver
@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_a_bound_must_be_a_positive_int(bad, tmp_path):
    with pytest.raises(ValueError, match="max_size_bytes"):
        InMemoryProgramCache(max_size_bytes=bad)
    with pytest.raises(ValueError, match="max_size_bytes"):
        FileStreamProgramCache(str(tmp_path), max_size_bytes=bad)


@pytest.mark.nodriver
def test_the_file_cache_persists_across_instances_and_processes(tmp_path):
    path = tmp_path / "programs"
    first = FileStreamProgramCache(path)
    first["k"] = b"compiled once"
    assert os.path.samefile(first.path, path)
    second = FileStreamProgramCache(str(path))
    assert second.get("k") == b"compiled once" and len(second) == 1
    # Another process reads what this one wrote, and writes what this one then reads.
    script = (
        "import sys\n"
        "from cudacore_rs.utils import FileStreamProgramCache\n"
        "c = FileStreamProgramCache(sys.argv[1])\n"
        "assert c[b'k'] == b'compiled once'\n"
        "c['other'] = b'from the child'\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120)
    assert second["other"] == b"from the child"
    del second["k"]
    assert FileStreamProgramCache(path).get("k") is None


@pytest.mark.nodriver
def test_the_file_cache_evicts_past_its_bound(tmp_path):
    cache = FileStreamProgramCache(tmp_path / "c", max_size_bytes=64 * 1024)
    for i in range(8):
        cache[f"k{i}"] = bytes([i]) * (16 * 1024)
    # Entries carry a header besides their bytes; at most 3 of 16 KiB fit in 64 KiB.
    kept = [i for i in range(8) if cache.get(f"k{i}") is not None]
    assert 1 <= len(kept) <= 3 and 7 in kept, kept
    assert all(cache[f"k{i}"] == bytes([i]) * (16 * 1024) for i in kept)


@pytest.mark.nodriver
def test_the_file_cache_refuses_a_directory_others_can_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(CUDAError, match="writable"):
        FileStreamProgramCache(str(shared))
