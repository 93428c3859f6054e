"""What NVML says of each device: name, utilization and memory (needs libnvidia-ml).

    python3 cuda-core-py/examples/system_monitor.py
"""

from cudacore_rs import Device, system


def main():
    print(f"{system.get_num_devices()} device(s), driver {system.get_driver_version()}")
    for ordinal in range(system.get_num_devices()):
        monitored = Device(ordinal).to_system_device()
        use = monitored.utilization
        memory = monitored.memory_info
        print(
            f"{ordinal}: {monitored.name}: GPU {use.gpu}%, memory {use.memory}%, "
            f"{memory.used // 2**20} MiB used of {memory.total // 2**20} MiB"
        )


if __name__ == "__main__":
    main()
