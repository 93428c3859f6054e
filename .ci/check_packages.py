"""Checks the .crate files `cargo package` made for the workspace's published crates.

Each must carry the workspace's license files unchanged and a README, and stay under
crates.io's 10 MB limit. Prints each crate's packaged size.
"""

import json
import os
import subprocess
import sys
import tarfile

LIMIT = 10 * 1000 * 1000  # crates.io refuses a .crate file larger than this
LICENSES = ("LICENSE-MIT", "LICENSE-APACHE")

metadata = json.loads(
    subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--no-deps"])
)
root = metadata["workspace_root"]
failures = []
for package in metadata["packages"]:
    if package["publish"] == []:  # `publish = false`
        continue
    name, version = package["name"], package["version"]
    path = os.path.join(metadata["target_directory"], "package", f"{name}-{version}.crate")
    if not os.path.exists(path):
        failures.append(f"{name}: no {path} (was it packaged?)")
        continue
    with tarfile.open(path) as crate:
        members = {m.name.split("/", 1)[1]: m for m in crate.getmembers() if "/" in m.name}
        for license in LICENSES:
            if license not in members:
                failures.append(f"{name}: the package has no {license}")
                continue
            with open(os.path.join(root, license), "rb") as workspace_copy:
                if crate.extractfile(members[license]).read() != workspace_copy.read():
                    failures.append(f"{name}: its {license} differs from the workspace's")
        if "README.md" not in members:
            failures.append(f"{name}: the package has no README.md")
    size = os.path.getsize(path)
    if size > LIMIT:
        failures.append(f"{name}: {size} bytes, over crates.io's limit of {LIMIT}")
    unpacked = sum(m.size for m in members.values())
    print(f"{name} {version}: {len(members)} files, {unpacked / 1024:.0f} KiB, "
          f"{size / 1024:.0f} KiB compressed")

for failure in failures:
    print(failure, file=sys.stderr)
sys.exit(1 if failures else 0)
