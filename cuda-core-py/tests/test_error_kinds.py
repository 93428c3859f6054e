"""CUDAError's subclasses, one per kind of driver error, chosen by the driver's code."""

import pytest

import cudacore_rs
from cudacore_rs import CUDAError, Device

KINDS = {
    1: "CUDAInvalidValueError",
    2: "CUDAOutOfMemoryError",
    3: "CUDANotInitializedError",
    100: "CUDANoDeviceError",
    101: "CUDAInvalidDeviceError",
    201: "CUDAInvalidContextError",
    400: "CUDAInvalidHandleError",
    500: "CUDANotFoundError",
    600: "CUDANotReadyError",
    700: "CUDAIllegalAddressError",
    719: "CUDALaunchError",
    801: "CUDANotSupportedError",
    901: "CUDAStreamCaptureError",
}


@pytest.mark.nodriver
def test_kinds_are_cuda_errors_exported_with_docstrings():
    for name in set(KINDS.values()):
        cls = getattr(cudacore_rs, name)
        assert issubclass(cls, CUDAError) and cls is not CUDAError
        assert cls.__module__ == "cudacore_rs"
        assert cls.__doc__
        assert name in cudacore_rs.__all__
    assert issubclass(cudacore_rs.CUDANotSupportedError, NotImplementedError)


@pytest.mark.standin
@pytest.mark.parametrize("code", sorted(KINDS))
def test_driver_code_picks_the_kind(standin, code):
    stream = Device(0).create_stream()
    standin.set_sync_status(code)
    try:
        with pytest.raises(CUDAError) as raised:
            stream.sync()
    finally:
        standin.set_sync_status(0)
    error = raised.value
    assert type(error).__name__ == KINDS[code]
    others = set(KINDS.values()) - {KINDS[code]}
    assert not any(isinstance(error, getattr(cudacore_rs, o)) for o in others)
    assert error.code == code
    assert error.call == "cuStreamSynchronize"
    stream.sync()
    stream.close()


@pytest.mark.standin
def test_a_code_of_no_kind_is_plain_cuda_error(standin):
    stream = Device(0).create_stream()
    standin.set_sync_status(999)  # CUDA_ERROR_UNKNOWN
    try:
        with pytest.raises(CUDAError) as raised:
            stream.sync()
    finally:
        standin.set_sync_status(0)
    assert type(raised.value) is CUDAError
    assert raised.value.code == 999
    stream.close()


@pytest.mark.standin
def test_name_is_kept(standin):
    stream = Device(0).create_stream()
    standin.set_sync_status(400)
    try:
        with pytest.raises(cudacore_rs.CUDAInvalidHandleError) as raised:
            stream.sync()
    finally:
        standin.set_sync_status(0)
    assert raised.value.name == "CUDA_ERROR_INVALID_HANDLE"
    stream.close()
