"""Maps the top-level folders sim/, real/ and firmware_export/ into the single robo_rl namespace.

Metadata lives in pyproject.toml; only the package list and directory mapping are computed here, because
setuptools' declarative `packages.find` cannot follow a package-dir mapping into sibling folders.
"""

from setuptools import find_packages, setup

MAPPED = {"robo_rl.sim": "sim", "robo_rl.real": "real", "robo_rl.firmware_export": "firmware_export"}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages = find_packages(include=["robo_rl", "robo_rl.*"])
    package_dir = {"robo_rl": "robo_rl"}
    for name, folder in MAPPED.items():
        package_dir[name] = folder
        packages.append(name)
        packages += [f"{name}.{sub}" for sub in find_packages(folder)]
    return packages, package_dir


packages, package_dir = _packages()
setup(packages=packages, package_dir=package_dir, package_data={"robo_rl": ["configs/*.yaml"]})
