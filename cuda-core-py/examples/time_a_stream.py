"""Times an empty span of a stream with two timing events, and prints the device it ran on.

    python3 cuda-core-py/examples/time_a_stream.py
"""

from cudacore_rs import Device, EventOptions, system


def main():
    print(f"{system.num_devices} device(s), driver {system.driver_version}")
    device = Device()
    device.set_current()
    print(f"{device!r}: {device.name}, compute capability {device.compute_capability}")
    timing = EventOptions(timing_enabled=True)
    with device.create_stream() as stream:
        start = stream.record(options=timing)
        end = stream.record(options=timing)
        end.sync()
        print(f"between two records: {end - start:.3f} ms")


if __name__ == "__main__":
    main()
