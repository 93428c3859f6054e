import pytest

import cudacore_rs
from cudacore_rs import CUDAError, Device


@pytest.mark.nodriver
def test_cuda_error_is_an_exception():
    assert issubclass(CUDAError, Exception)
    assert CUDAError.__module__ == "cudacore_rs"


@pytest.mark.standin
def test_driver_error_carries_name_and_code(standin):
    stream = Device(0).create_stream()
    standin.set_sync_status(400)  # CUDA_ERROR_INVALID_HANDLE
    with pytest.raises(CUDAError) as raised:
        stream.sync()
    error = raised.value
    assert error.name == "CUDA_ERROR_INVALID_HANDLE"
    assert error.code == 400
    assert error.call == "cuStreamSynchronize"
    assert "CUDA_ERROR_INVALID_HANDLE" in str(error)
    standin.set_sync_status(0)
    stream.sync()
    stream.close()


@pytest.mark.standin
def test_system(standin):
    assert cudacore_rs.system.num_devices == 2
    assert cudacore_rs.system.get_num_devices() == 2
    assert cudacore_rs.system.driver_version == (13, 0)
    assert cudacore_rs.system.get_user_mode_driver_version() == (13, 0)
    with pytest.raises(AttributeError):
        cudacore_rs.system.no_such_thing
