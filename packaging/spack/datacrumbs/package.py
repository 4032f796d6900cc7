# Spack recipe of datacrumbs. NOT TESTED in this repository's CI (no Spack on its machines):
# copy this directory into a Spack repository's packages/ and `spack install datacrumbs`.
# See docs/install.md "Packages".
from spack.package import *


class Datacrumbs(CMakePackage):
    """An eBPF I/O tracer for HPC applications, scripted in Lua 5.4, writing DFTracer
    traces (.pfw.gz). Needs a Linux kernel with BTF (5.15+) at run time, and root or
    CAP_BPF + CAP_PERFMON."""

    # The project's public address is not fixed yet: point both at the repository the site
    # clones from (a local path works: git = "file:///path/to/datacrumbs").
    homepage = "file:///opt/src/datacrumbs"
    git = "file:///opt/src/datacrumbs"
    license("BSD-3-Clause")

    version("main", branch="main")

    variant("report", default=True, description="the Python report and loader's dependencies")

    depends_on("c", type="build")
    depends_on("cxx", type="build")  # the tests' C++ program
    depends_on("cmake@3.16:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("llvm+clang", type="build")  # clang -target bpf for the BPF objects
    depends_on("bpftool", type="build")  # the skeletons (and vmlinux.h from /sys/kernel/btf)
    depends_on("libbpf@1:")
    depends_on("elfutils")  # libelf
    depends_on("lua@5.4")
    depends_on("lua-luv")
    depends_on("libuv")
    depends_on("libyaml")
    depends_on("zlib-api")
    depends_on("isa-l")  # igzip: the trace's gzip members
    depends_on("zydis@4:")  # decodes C++ functions for their return instructions (core/retsite.c)
    depends_on("openssl")
    depends_on("python@3.8:", type="run")
    depends_on("py-pandas", type="run", when="+report")
    depends_on("py-matplotlib", type="run", when="+report")
    depends_on("py-dask", type="run", when="+report")
    depends_on("py-distributed", type="run", when="+report")

    def cmake_args(self):
        return [self.define("VMLINUX_BTF", "/sys/kernel/btf/vmlinux")]

    def setup_run_environment(self, env):
        env.append_path("DATACRUMBS_SCRIPT_PATH", self.prefix.share.datacrumbs.scripts)
        env.append_path("DATACRUMBS_PROBE_PATH", self.prefix.share.datacrumbs.probes)
        env.prepend_path("PYTHONPATH", self.prefix.share.datacrumbs.python)
