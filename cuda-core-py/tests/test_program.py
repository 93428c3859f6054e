"""Program, ProgramOptions, ObjectCode and Kernel.

Compiles run in a fresh interpreter without the stand-in (``run_compiles``: NVRTC crashes
against it), and need NVRTC (``needs_nvrtc``); loading code and reading kernels run against
the stand-in, whose every library holds its kernels k0, k1, k4, k16, empty0, empty4, empty16.
"""

import os
import stat

import pytest
from conftest import needs_nvrtc, run_compiles

from cudacore_rs import CUDAError, Device, Kernel, ObjectCode, Program, ProgramOptions


def minimal_cubin():
    """The smallest ELF image cuda-core's checks pass and the stand-in loads."""
    elf = bytearray(64)
    elf[:4] = b"\x7fELF"
    elf[4], elf[5], elf[6] = 2, 1, 1  # 64-bit, little-endian, version 1
    elf[16], elf[18], elf[20] = 2, 190, 1  # ET_EXEC, EM_CUDA, EV_CURRENT
    elf[52], elf[54], elf[58] = 64, 56, 64  # header sizes
    return bytes(elf)


SAXPY = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

# ---- ProgramOptions ---------------------------------------------------------------------------


@pytest.mark.nodriver
def test_program_options_keep_cuda_cores_fields_and_defaults():
    options = ProgramOptions(arch="sm_90", std="c++17", define_macro=("N", "7"))
    assert options.name == "default_program"
    assert options.arch == "sm_90"
    assert options.std == "c++17"
    assert options.define_macro == ("N", "7")
    assert options.debug is None and options.max_register_count is None
    with pytest.raises(AttributeError):
        options.not_a_field
    # Positional arguments follow cuda.core's order: name, arch, relocatable_device_code.
    positional = ProgramOptions("mine", "sm_80", True)
    assert (positional.name, positional.arch, positional.relocatable_device_code) == (
        "mine",
        "sm_80",
        True,
    )
    assert "arch='sm_90'" in repr(options) and "std='c++17'" in repr(options)


@pytest.mark.nodriver
def test_program_options_compare_by_what_they_ask():
    assert ProgramOptions(arch="sm_90", debug=True) == ProgramOptions(debug=True, arch="sm_90")
    assert ProgramOptions(arch="sm_90") != ProgramOptions(arch="sm_80")
    assert ProgramOptions(define_macro="A") != ProgramOptions(define_macro=["A", ("B", "1")])


@pytest.mark.nodriver
def test_program_options_refuse_what_they_cannot_take():
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        ProgramOptions(bogus=1)
    with pytest.raises(TypeError, match="multiple values"):
        ProgramOptions("a", name="b")
    with pytest.raises(NotImplementedError, match="fdevice_syntax_only"):
        ProgramOptions(fdevice_syntax_only=True)
    ProgramOptions(fdevice_syntax_only=False)  # not asking for it is fine
    with pytest.raises(ValueError, match="ofast_compile"):
        ProgramOptions(ofast_compile="fastest")
    with pytest.raises(ValueError, match="max_register_count"):
        ProgramOptions(max_register_count=-1)
    with pytest.raises(TypeError, match="define_macro"):
        ProgramOptions(define_macro=[1, 2, 3])
    with pytest.raises(TypeError, match="std"):
        ProgramOptions(std=17)


# ---- Program: what is refused before any compiler runs -----------------------------------------


def test_program_refuses_bad_arguments_before_compiling():
    with pytest.raises(ValueError, match="code_type"):
        Program(SAXPY, "fortran")
    with pytest.raises(TypeError, match="str"):
        Program(SAXPY.encode(), "c++")
    with pytest.raises(TypeError, match="options"):
        Program(SAXPY, "c++", options=42)
    with pytest.raises(TypeError, match="bogus"):
        Program(SAXPY, "c++", options={"bogus": True})
    program = Program(SAXPY, "c++", options={"arch": "sm_90"})
    assert program.backend == "NVRTC"
    with pytest.raises(ValueError, match="target_type"):
        program.compile("fatbin")
    with pytest.raises(TypeError, match="name_expressions"):
        program.compile("ptx", name_expressions="saxpy")
    with pytest.raises(TypeError, match="write"):
        program.compile("ptx", logs=object())
    with pytest.raises(ValueError, match="nvvm"):
        Program(SAXPY, "c++", ProgramOptions(use_libdevice=True))


def test_a_closed_program_raises():
    program = Program(SAXPY, "c++", ProgramOptions(arch="sm_90", name="saxpy.cu"))
    assert "saxpy.cu" in repr(program) and not program.closed
    program.close()
    program.close()  # twice is harmless
    assert program.closed and "closed" in repr(program)
    with pytest.raises(RuntimeError, match="closed"):
        program.compile("ptx")


# ---- compiling (NVRTC, in a fresh interpreter) ------------------------------------------------

_COMPILE = """
import io, json, threading, time
from cudacore_rs import CUDAError, Program, ProgramOptions
SAXPY = {saxpy!r}
out = {{}}
ptx = Program(SAXPY, "c++", ProgramOptions(arch="sm_90", name="saxpy.cu")).compile("ptx")
out["ptx"] = [ptx.code_type, ptx.name, b".entry saxpy" in ptx.code, b".target sm_90" in ptx.code]
cubin = Program(SAXPY, "c++", ProgramOptions(arch="sm_90")).compile("cubin")
out["cubin"] = [cubin.code_type, cubin.name, cubin.code[:4].hex()]
try:
    Program('extern "C" __global__ void k() {{ undeclared(); }}', "c++",
            ProgramOptions(arch="sm_90")).compile("ptx")
    out["error"] = None
except CUDAError as e:
    out["error"] = str(e)
guarded = '#if N != 7\\n#error N is not 7\\n#endif\\nextern "C" __global__ void k() {{}}'
Program(guarded, "c++", ProgramOptions(arch="sm_90", define_macro=("N", "7"))).compile("ptx")
try:
    Program(guarded, "c++", ProgramOptions(arch="sm_90", define_macro=("N", "8"))).compile("ptx")
    out["define"] = None
except CUDAError as e:
    out["define"] = str(e)
template = "template <typename T> __global__ void axpy(T* x) {{ *x = T(1); }}"
code = Program(template, "c++", {{"arch": "sm_90"}}).compile("cubin", ("axpy<float>", "axpy<int>"))
out["symbols"] = code.symbol_mapping
log = io.StringIO()
Program('extern "C" __global__ void k() {{ int unused; }}', "c++",
        ProgramOptions(arch="sm_90")).compile("ptx", logs=log)
out["log"] = log.getvalue()
quiet = io.StringIO()
Program('extern "C" __global__ void k() {{}}', "c++", ProgramOptions(arch="sm_90")).compile(
    "ptx", logs=quiet)
out["quiet"] = quiet.getvalue()
# The GIL is released while NVRTC runs: another thread counts meanwhile.
count, stop = [0], threading.Event()
def spin():
    while not stop.is_set():
        count[0] += 1
thread = threading.Thread(target=spin)
big = "".join(f'extern "C" __global__ void k{{i}}(float* x) {{{{ x[{{i}}] = sinf(x[{{i}}]); }}}}\\n'
              for i in range(600))
program = Program(big, "c++", ProgramOptions(arch="sm_90"))
thread.start()
time.sleep(0.05)
before = count[0]
started = time.perf_counter()
program.compile("cubin")
seconds = time.perf_counter() - started
during = count[0] - before
stop.set()
thread.join()
out["gil"] = [during, seconds]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled():
    needs_nvrtc()
    return run_compiles(_COMPILE.format(saxpy=SAXPY))


def test_compile_to_ptx_and_cubin(compiled):
    kind, name, has_entry, has_target = compiled["ptx"]
    assert (kind, name) == ("ptx", "saxpy.cu")
    assert has_entry, "the PTX defines the saxpy entry"
    assert has_target, "the PTX targets the arch asked for"
    kind, name, magic = compiled["cubin"]
    assert (kind, name) == ("cubin", "default_program")
    assert magic == "7f454c46", "a cubin is an ELF image"


def test_a_failed_compile_raises_with_nvrtcs_log(compiled):
    assert compiled["error"] is not None
    assert "undeclared" in compiled["error"] and "undefined" in compiled["error"]


def test_define_macro_reaches_nvrtc(compiled):
    assert compiled["define"] is not None and "N is not 7" in compiled["define"]


def test_name_expressions_give_their_symbols(compiled):
    symbols = compiled["symbols"]
    assert set(symbols) == {"axpy<float>", "axpy<int>"}
    assert symbols["axpy<float>"] != symbols["axpy<int>"]
    assert all(s.startswith("_Z4axpy") for s in symbols.values()), symbols


def test_logs_get_the_compilers_warnings(compiled):
    assert "unused" in compiled["log"] and "never referenced" in compiled["log"]
    assert compiled["quiet"] == ""


def test_compiling_releases_the_gil(compiled):
    during, seconds = compiled["gil"]
    assert seconds > 0.05, "the compile was long enough to tell"
    # Held for the whole compile, the GIL would have let the counter run only at switch
    # intervals (every 5 ms): a handful of counts. Released, it counts freely.
    assert during > 1000, (during, seconds)


# ---- ObjectCode -------------------------------------------------------------------------------


@pytest.mark.standin
def test_object_code_from_bytes_path_and_object_code(standin, tmp_path):
    image = minimal_cubin()
    code = ObjectCode.from_cubin(image)
    assert code.code_type == "cubin" and code.code == image and code.name == ""
    named = ObjectCode.from_cubin(bytearray(image), name="mine", symbol_mapping={"a": "k4"})
    assert named.name == "mine" and named.symbol_mapping == {"a": "k4"}
    path = tmp_path / "kernels.cubin"
    path.write_bytes(image)
    from_path = ObjectCode.from_cubin(str(path))
    assert from_path.code == str(path), "as cuda.core: the path it was given"
    again = ObjectCode.from_cubin(from_path)
    assert again.code == str(path) and again.code_type == "cubin"
    assert ObjectCode.from_ptx(b".version 8.0\n").code_type == "ptx"
    assert ObjectCode.from_fatbin(image).code_type == "fatbin"
    assert ObjectCode.from_ltoir(image).code_type == "ltoir"
    with pytest.raises(ValueError, match="cubin"):
        ObjectCode.from_ptx(code)
    with pytest.raises(TypeError):
        ObjectCode.from_cubin(12)
    with pytest.raises(FileNotFoundError):
        ObjectCode.from_cubin(str(tmp_path / "missing.cubin"))
    with pytest.raises(RuntimeError):
        ObjectCode()
    assert not standin.calls("cuLibraryLoad"), "nothing is loaded before get_kernel"


@pytest.mark.standin
def test_get_kernel_loads_once_and_refuses_a_missing_name(standin):
    code = ObjectCode.from_cubin(minimal_cubin(), symbol_mapping={"four": "k4"})
    kernel = code.get_kernel("k4")
    assert isinstance(kernel, Kernel) and "k4" in repr(kernel)
    assert code.get_kernel(b"k1") is not None
    assert code.get_kernel("four").num_arguments == 4, "symbol_mapping names the symbol"
    assert len(standin.calls("cuLibraryLoadData")) == 1
    standin.clear()
    with pytest.raises((ValueError, CUDAError), match="nope"):
        code.get_kernel("nope")
    assert not standin.calls("cuLibraryGetKernel nope"), "refused before the driver"
    with pytest.raises(TypeError):
        code.get_kernel(4)


# ---- Kernel -----------------------------------------------------------------------------------


@pytest.fixture
def k4():
    return ObjectCode.from_cubin(minimal_cubin()).get_kernel("k4")


@pytest.mark.standin
def test_kernel_arguments_info(k4):
    assert k4.num_arguments == 4
    info = k4.arguments_info
    assert [(p.offset, p.size) for p in info] == [(0, 8), (8, 8), (16, 8), (24, 8)]
    assert type(info[0]).__name__ == "ParamInfo"
    # empty4: three 8-byte parameters and an int.
    empty4 = ObjectCode.from_cubin(minimal_cubin()).get_kernel("empty4")
    assert [p.size for p in empty4.arguments_info] == [8, 8, 8, 4]
    assert k4.handle != 0


@pytest.mark.standin
def test_kernel_attributes_read_the_driver(standin, k4):
    attributes = k4.attributes
    assert attributes is k4.attributes
    standin.clear()
    # The stand-in's kernels allow 1024 threads and 48 KiB of dynamic shared memory.
    assert attributes.max_threads_per_block() == 1024
    assert "cuKernelGetAttribute k4 attribute=0 device=0" in standin.calls("cuKernelGetAttribute")[-1]
    assert attributes.max_dynamic_shared_size_bytes(0) == 48 * 1024
    assert attributes.num_regs(Device(0)) == 0
    assert attributes.cache_mode_ca() is False
    assert attributes.max_threads_per_block(1) == 1024
    assert "device=1" in standin.calls("cuKernelGetAttribute")[-1]
    with pytest.raises(ValueError, match="device_id"):
        attributes.num_regs(99)
    with pytest.raises(TypeError, match="device_id"):
        attributes.num_regs("0")


@pytest.mark.standin
def test_kernel_occupancy(k4):
    occupancy = k4.occupancy
    assert occupancy is k4.occupancy
    # The stand-in answers two blocks per SM for any kernel.
    assert occupancy.max_active_blocks_per_multiprocessor(256, 0) == 2
    with pytest.raises(ValueError, match="block_size"):
        occupancy.max_active_blocks_per_multiprocessor(-1, 0)
    with pytest.raises(TypeError, match="callable"):
        occupancy.max_potential_block_size(lambda b: 0, 0)
    with pytest.raises(RuntimeError):
        Kernel()


@pytest.mark.standin
def test_object_code_from_a_readonly_file_reads_its_bytes(tmp_path):
    path = tmp_path / "ro.cubin"
    path.write_bytes(minimal_cubin())
    os.chmod(path, stat.S_IRUSR)
    assert ObjectCode.from_cubin(str(path)).get_kernel("k0").num_arguments == 0
