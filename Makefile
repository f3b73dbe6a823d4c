# SPDX-License-Identifier: GPL-2.0
#
# Driver for the SFrame user-space unwinder series on Linux 7.2.
#
#   make check    install what is missing, build, boot under QEMU, run every test
#   make demo     boot and profile the bundled workload with perf (demo/)
#   make bench    boot and measure the unwinders: step, perf, registration (bench/)
#   make profile  instructions of one SFrame walk, per kernel function (bench/profile/)
#   make perf     build tools/perf of the same tree, on the host
#   make kernel   build bzImage only
#   make vng      boot with virtme-ng, run the kselftests with run_kselftest.sh
#   make check-kasan  the test kernel plus KASAN, built with clang (Rust
#                 included), booted with make check's initramfs (not part of check)
#   make boot     interactive shell in the guest
#   make series   write the git format-patch series against pristine 7.2
#   make fresh-root   README's two commands (clone, make check) in a new
#                 Debian 12 root: proves the install steps (not part of check)
#   make systemd  a Debian 12 guest booted with systemd as PID 1 and the
#                 provider's unit enabled: checks it (root only; not part of check)
#   make check-arm64  the series built for arm64 (cross), booted under
#                 qemu-system-aarch64 -M virt -cpu max, its tests cross-built
#                 (not part of check)
#
# Build products live outside the repository, in $(KBUILD_DIR).

KBUILD_DIR ?= $(HOME)/.cache/unwind-user
SRC        := $(KBUILD_DIR)/src
OUT        := $(KBUILD_DIR)/build
# The production configuration (no debug checks) that make bench measures.
OUT_PROD   := $(KBUILD_DIR)/build-prod
# The same without the SFrame unwinder (make bench-hooks).
OUT_OFF    := $(KBUILD_DIR)/build-prod-off
GUEST      := $(KBUILD_DIR)/guest
# The test kernel with what virtme-ng needs (make vng), and vng itself, from
# PyPI in a virtual environment (harness/install-deps.sh vng).
OUT_VNG    := $(KBUILD_DIR)/build-vng
VENV       := $(KBUILD_DIR)/venv
# make vng's kselftest installation (run_kselftest.sh) and its logs.
VNG_DIR    := $(KBUILD_DIR)/vng
KSFT_VNG   := $(VNG_DIR)/kselftest
# kvm if make check's probe found KVM working on this machine, else tcg.
VNG_ACCEL  ?= $(shell cat $(KBUILD_DIR)/check/kvm-probe 2>/dev/null || echo tcg)
# Seconds each test program may run (the busybox guest's bound too).
VNG_TEST_TIMEOUT ?= 600
# More arguments of run_kselftest.sh, e.g. -t unwind_user:sframe_jit_test.
KSFT_ARGS  ?=
# make check-kasan: the test kernel plus harness/configs/kasan.config,
# built with clang, since a kernel with Rust and KASAN must be (init/Kconfig:
# RUST depends on !KASAN || CC_IS_CLANG; rustc instruments the Rust code,
# -Zsanitizer=kernel-address). LLVM=-22: bookworm's clang-22, the LLVM of
# Debian's rustc-web. bindgen gets libclang of the same version (libclang1-22):
# libclang 19 fails on the warning options the kernel found clang-22 to take
# ("unknown warning option '-Wno-default-const-init-unsafe'").
OUT_KASAN  := $(KBUILD_DIR)/build-kasan
KASAN_DIR  := $(KBUILD_DIR)/check-kasan
KASAN_LLVM ?= -22
KASAN_LIBCLANG ?= /usr/lib/llvm-22/lib
# KASAN's shadow takes an eighth of the guest's memory, its quarantine and
# redzones more of what is left (2.4 of the 3G were still free during the
# fault-injection test); and the guest is slower: 40 s to /init against
# the test kernel's 16 s, 9 minutes for the whole run.
KASAN_GUEST_MEM ?= 3G
KASAN_BOOT_TIMEOUT ?= 2700
# make systemd: the test kernel plus what systemd as PID 1 and the
# provider's unit need (harness/configs/systemd.config), and its runs
# (the debootstrap'ed root it copies, the logs).
OUT_SD     := $(KBUILD_DIR)/build-systemd
SYSTEMD_DIR := $(KBUILD_DIR)/systemd
# Seconds make systemd's guest may run: its boot, two waits for the
# provider's answers under TCG and perf script's DWARF unwinding.
SYSTEMD_TIMEOUT ?= 1800
# make check-arm64: the kernel (harness/configs/arm64.config), cross-built,
# and its guest's files and logs.
OUT_ARM64  := $(KBUILD_DIR)/build-arm64
ARM64_DIR  := $(KBUILD_DIR)/check-arm64
# The selftest programs of other SFrame producers, built from source.
PRODUCERS  := $(KBUILD_DIR)/producers
# The decoder's oracle corpus: binaries built from its sources by real
# toolchains and their dumps, generated (not committed) before the host
# tests read them.
CORPUS     := rust/sframe/tests/corpus
CORPUS_SRCS := $(wildcard $(CORPUS)/src/*) $(addprefix $(CORPUS)/,generate.sh toolchains.sh findfre.c)
PRODUCER_SRCS := harness/producers/build.sh harness/producers/sframe_unwind_one.c \
	harness/producers/sframe_cxx_test.cc \
	$(addprefix tools/testing/selftests/unwind_user/,sframe_unwind_test.c \
		unwind_user_test.c unwind_user_test.h)
SERIES_DIR ?= $(KBUILD_DIR)/series
# sframe_libc_test's LD_AUDIT module (tools/unwind_user/audit) and its cache
# (harness/stage-audit.sh): the sections sframe-synth makes from the host's
# libc, ld.so and libm, the same files the guest gets (extra-libs: libm is
# dlopen'ed, and the module's own libc finds ld.so by its name under
# /lib/x86_64-linux-gnu).
SYNTH_LIBS := $(addprefix /lib/x86_64-linux-gnu/,libc.so.6 ld-linux-x86-64.so.2 libm.so.6)
REPO       := $(CURDIR)
JOBS       ?= $(shell echo $$(( $$(nproc) + 1 )))
# Seconds a guest may run before it counts as hung (make check's test
# guest runs about 12 minutes).
BOOT_TIMEOUT ?= 1200
# make bench's guest clock under TCG: -icount shift=N, one instruction is
# 2^N ns of guest time, so that what the guest times is a count of
# instructions, deaf to the host's load. Empty: host time.
BENCH_ICOUNT ?= 0
# The same for make demo and make oracle. Under plain TCG the demo's
# start-up before main (about 150,000 instructions: well under a
# millisecond on hardware) got 80 to 140 of a row's 30,000 samples, and
# varied with the host's load by as much; with the clock counting
# instructions it gets 0 to 3, each part of a run its share of the work.
DEMO_ICOUNT ?= 0
# make system checks correctness: host time, all of the guest's vCPUs.
SYSTEM_ICOUNT ?=
# Where make demo puts its outputs (make check: in its logs).
DEMO_OUT   ?= $(KBUILD_DIR)/demo
SYSTEM_OUT ?= $(KBUILD_DIR)/system
# Where make host-test keeps cargo test's output (make check: in its logs).
HOST_TEST_LOG ?= $(KBUILD_DIR)/host-test.log
# ... and of tools/unwind_user/python's tests (python3.11's unittest).
PY_TEST_LOG ?= $(KBUILD_DIR)/py-test.log

# Debian's rustc-web carries the library source the kernel build needs; the
# rustup toolchain first in PATH does not.
KMAKE_ANY := $(MAKE) -C $(SRC) -j$(JOBS) \
	RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc \
	BINDGEN=$(HOME)/.cargo/bin/bindgen
KMAKE := $(KMAKE_ANY) O=$(OUT)
KMAKE_PROD := $(KMAKE_ANY) O=$(OUT_PROD)
KMAKE_OFF  := $(KMAKE_ANY) O=$(OUT_OFF)
KMAKE_VNG := $(KMAKE_ANY) O=$(OUT_VNG)
KMAKE_SD := $(KMAKE_ANY) O=$(OUT_SD)
KMAKE_ARM64 := $(KMAKE_ANY) O=$(OUT_ARM64) ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-
KMAKE_KASAN := LIBCLANG_PATH=$(KASAN_LIBCLANG) $(KMAKE_ANY) O=$(OUT_KASAN) LLVM=$(KASAN_LLVM)

export PATH := $(HOME)/.cargo/bin:$(PATH)
# bindgen loads libclang at run time and 7.2 needs >= 17: use the one
# harness/install-deps.sh installs, whatever else the machine has.
export LIBCLANG_PATH := /usr/lib/llvm-19/lib

# A recipe that fails leaves no target behind for a rerun to trust (a
# .config that failed check-config.sh, say).
.DELETE_ON_ERROR:

.PHONY: check demo bench kernel boot series deps source apply config \
	host-test kernel-clippy selftests initramfs clean-build perf fresh-root \
	kernel-prod kernel-prod-off bench-hooks bench-debug profile producers bisect-check kernel-vng vng \
	vng-deps kselftest-vng oracle system startup corpus kernel-kasan check-kasan \
	kernel-systemd systemd arm64-deps kernel-arm64 check-arm64 arm64-root \
	perf-arm64 oracle-arm64

deps:
	@harness/install-deps.sh

source: deps
	@harness/fetch-kernel.sh $(SRC)

apply: source
	@head=$$(harness/apply.py $(REPO) $(SRC)) && \
		echo "apply: $$(cat $(SRC)/.debian-version) + $$(grep -c '^Subject:' patches/series) patches -> $$head"

# tinyconfig, the fragments $(2) merged together onto it, then the fragment
# $(4) if any merged after them (merge_config.sh, then olddefconfig each
# time, as `make tinyconfig X.config Y.config` does with the tree's
# kernel/configs/), into $(1)/.config with $(3) as the make command; then
# every option the fragments $(5) ask for is checked to have made it in. A
# .config is made again only when a fragment or a Kconfig file changes, so
# that an edit to a .rs file rebuilds only that.
define kconfig
	mkdir -p $(1)
	$(3) rustavailable
	( $(3) tinyconfig && \
	  $(SRC)/scripts/kconfig/merge_config.sh -m -O $(1) $(1)/.config $(2) && \
	  $(3) olddefconfig && \
	  if [ -n "$(4)" ]; then \
		$(SRC)/scripts/kconfig/merge_config.sh -m -O $(1) $(1)/.config $(4) && \
		$(3) olddefconfig; \
	  fi ) >$(1)/config.log 2>&1 || { cat $(1)/config.log; exit 1; }
	for f in $(5); do harness/check-config.sh $(1)/.config $$f || exit 1; done
endef

# The test configuration: what the selftests need (where kselftest looks
# for it) and what a tinyconfig kernel needs to boot under QEMU and run
# them, KUnit and the debugging that catches this code's bugs.
TEST_CONFIG := harness/configs/qemu.config tools/testing/selftests/unwind_user/config

$(OUT)/.config: $(TEST_CONFIG) $(wildcard kernel/unwind_user/Kconfig) | apply
	$(call kconfig,$(OUT),$(TEST_CONFIG),$(KMAKE),,$(TEST_CONFIG))

config: apply $(OUT)/.config

# The same tree, configured as users run it: the test fragment, then the
# production one that turns the debugging off.
$(OUT_PROD)/.config: $(TEST_CONFIG) harness/configs/prod.config \
		$(wildcard kernel/unwind_user/Kconfig) | apply
	$(call kconfig,$(OUT_PROD),$(TEST_CONFIG),$(KMAKE_PROD),harness/configs/prod.config,harness/configs/prod.config)

# The test configuration plus what virtme-ng needs (virtio, 9p, virtio-fs).
# The vng fragment is not part of the series: merge_config.sh takes it from
# this repository, as `make tinyconfig X.config` does from the tree.
$(OUT_VNG)/.config: $(TEST_CONFIG) harness/configs/vng.config \
		$(wildcard kernel/unwind_user/Kconfig) | apply
	$(call kconfig,$(OUT_VNG),$(TEST_CONFIG),$(KMAKE_VNG),harness/configs/vng.config,$(TEST_CONFIG) harness/configs/vng.config)

# The vng configuration plus what systemd as PID 1 and the provider's unit
# need of the kernel (harness/configs/systemd.config): its root is 9p, as
# vng's is.
$(OUT_SD)/.config: $(TEST_CONFIG) harness/configs/vng.config harness/configs/systemd.config \
		$(wildcard kernel/unwind_user/Kconfig) | apply
	$(call kconfig,$(OUT_SD),$(TEST_CONFIG),$(KMAKE_SD),harness/configs/vng.config harness/configs/systemd.config,$(TEST_CONFIG) harness/configs/vng.config harness/configs/systemd.config)

# The arm64 kernel: tinyconfig, harness/configs/arm64.config and what the
# selftests need, with the same series.
ARM64_CONFIG := harness/configs/arm64.config tools/testing/selftests/unwind_user/config

$(OUT_ARM64)/.config: $(ARM64_CONFIG) $(wildcard kernel/unwind_user/Kconfig) | apply arm64-deps
	$(call kconfig,$(OUT_ARM64),$(ARM64_CONFIG),$(KMAKE_ARM64),,$(ARM64_CONFIG))

arm64-deps: deps
	@harness/install-deps.sh arm64

kernel-arm64: arm64-deps apply $(OUT_ARM64)/.config
	$(KMAKE_ARM64) Image
	@echo "kernel-arm64: $(OUT_ARM64)/arch/arm64/boot/Image"

# Debian's arm64 busybox and libraries, unpacked: the arm64 guests' root.
arm64-root: arm64-deps
	@harness/arm64-root.sh $(ARM64_DIR)/root

# It also runs make oracle-arm64's comparison, and reports it with its own.
check-arm64: kernel-arm64 arm64-root perf-arm64
	@harness/check-arm64.sh $(REPO) $(KBUILD_DIR) $(OUT_ARM64) $(ARM64_DIR) $(BOOT_TIMEOUT) \
		$(PERF_ARM64)/build/perf

# perf for arm64, cross-built and static, and make oracle-arm64: the
# kernel's stacks on arm64 against perf's DWARF unwind of the same samples
# (demo/run-oracle-arm64.sh).
PERF_ARM64 := $(KBUILD_DIR)/perf-arm64
perf-arm64: arm64-deps apply
	@harness/build-perf.sh $(SRC) $(PERF_ARM64) $(KBUILD_DIR)/perf-sysroot

oracle-arm64: kernel-arm64 arm64-root perf-arm64
	@$(KMAKE_ARM64) headers_install INSTALL_HDR_PATH=$(OUT_ARM64)/usr >/dev/null
	@UNWIND_USER_TOOLCHAINS=$(KBUILD_DIR)/toolchains \
		demo/run-oracle-arm64.sh $(OUT_ARM64)/arch/arm64/boot/Image $(PERF_ARM64)/build/perf \
		$(ARM64_DIR)/oracle $(BOOT_TIMEOUT) $(ARM64_DIR)/root $(OUT_ARM64)/usr/include

# make bench-arm64: make bench's step and cold phases on the arm64 kernel
# configured as make bench's (harness/configs/prod.config merged after the
# arm64 fragments), under qemu-system-aarch64 -icount (bench/run-bench-arm64.sh).
OUT_ARM64_PROD := $(KBUILD_DIR)/build-arm64-prod
KMAKE_ARM64_PROD := $(KMAKE_ANY) O=$(OUT_ARM64_PROD) ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-
.PHONY: kernel-arm64-prod bench-arm64

$(OUT_ARM64_PROD)/.config: $(ARM64_CONFIG) harness/configs/prod.config \
		$(wildcard kernel/unwind_user/Kconfig) | apply arm64-deps
	$(call kconfig,$(OUT_ARM64_PROD),$(ARM64_CONFIG),$(KMAKE_ARM64_PROD),harness/configs/prod.config,harness/configs/prod.config)

kernel-arm64-prod: arm64-deps apply $(OUT_ARM64_PROD)/.config
	$(KMAKE_ARM64_PROD) Image
	@echo "kernel-arm64-prod: $(OUT_ARM64_PROD)/arch/arm64/boot/Image"

bench-arm64: kernel-arm64-prod arm64-root
	@GUEST_ICOUNT=$(BENCH_ICOUNT) bench/run-bench-arm64.sh $(OUT_ARM64_PROD)/arch/arm64/boot/Image \
		$(ARM64_DIR)/root/bin/busybox $(KBUILD_DIR)/bench-arm64 $(BOOT_TIMEOUT)

kernel-systemd: apply $(OUT_SD)/.config
	$(KMAKE_SD) bzImage
	@echo "kernel-systemd: $(OUT_SD)/arch/x86/boot/bzImage"

kernel-vng: apply $(OUT_VNG)/.config
	$(KMAKE_VNG) bzImage
	@echo "kernel-vng: $(OUT_VNG)/arch/x86/boot/bzImage"

# The kselftests installed the kselftest way, from the tree's
# tools/testing/selftests with TARGETS=unwind_user (built against the vng
# kernel's headers): run_kselftest.sh, kselftest-list.txt, the programs of
# tools/testing/selftests/unwind_user/Makefile. Added as make selftests
# does for the busybox guest, but built here, so that $(GUEST) is left to
# make check: what sframe_libc_test needs next to it (the LD_AUDIT module,
# sframe-synth's cache for the host's libc and ld.so, which are the
# guest's) and the deep-chain test built by the other SFrame producers,
# listed as more tests of the collection.
kselftest-vng: apply $(OUT_VNG)/.config producers
	$(KMAKE_VNG) headers_install INSTALL_HDR_PATH=$(OUT_VNG)/usr >/dev/null
	rm -rf $(KSFT_VNG)
	$(MAKE) -C $(SRC)/tools/testing/selftests O=$(OUT_VNG) TARGETS=unwind_user \
		INSTALL_PATH=$(KSFT_VNG) install >$(OUT_VNG)/kselftest-install.log 2>&1 || \
		{ cat $(OUT_VNG)/kselftest-install.log; exit 1; }
	harness/stage-audit.sh $(KSFT_VNG)/unwind_user "-isystem $(OUT_VNG)/usr/include" $(SYNTH_LIBS)
	cd $(PRODUCERS) && for t in *_test; do \
		cp $$t $(KSFT_VNG)/unwind_user/ && echo "unwind_user:$$t" >>$(KSFT_VNG)/kselftest-list.txt; \
	done
	@echo "kselftest-vng: $$(wc -l <$(KSFT_VNG)/kselftest-list.txt) tests in $(KSFT_VNG)"

vng-deps:
	@harness/install-deps.sh vng $(VENV)

# The test configuration plus KASAN, merged as the vng fragment is; the
# kasan fragment also checks that the compiler is clang and Rust stayed on.
$(OUT_KASAN)/.config: $(TEST_CONFIG) harness/configs/kasan.config \
		$(wildcard kernel/unwind_user/Kconfig) | apply
	$(call kconfig,$(OUT_KASAN),$(TEST_CONFIG),$(KMAKE_KASAN),harness/configs/kasan.config,$(TEST_CONFIG) harness/configs/kasan.config)

# The Rust objects must call KASAN's checks: the unwinder and the decoder.
kernel-kasan: apply $(OUT_KASAN)/.config
	$(KMAKE_KASAN) bzImage
	@for o in kernel/unwind_user/unwind_user.o rust/sframe.o; do \
		nm -u $(OUT_KASAN)/$$o | grep -q ' __asan_report_load' || \
			{ echo "kernel-kasan: $$o has no KASAN checks" >&2; exit 1; }; \
	done
	@echo "kernel-kasan: $(OUT_KASAN)/arch/x86/boot/bzImage"

# make check's guest (its initramfs: KUnit at boot, the kselftests, kmemleak)
# on the KASAN kernel, summed up by harness/results.py's guest part: any
# KASAN report, BUG, WARN, lockdep or RCU splat fails it, and so does a
# console without KASAN's banner. Logs in $(KASAN_DIR)/guest.
check-kasan: kernel-kasan initramfs
	@rm -rf $(KASAN_DIR) && mkdir -p $(KASAN_DIR)
	@cp $(KBUILD_DIR)/check/kvm-probe $(KASAN_DIR)/ 2>/dev/null || true
	@GUEST_MEM=$(KASAN_GUEST_MEM) harness/run-guest.sh $(OUT_KASAN)/arch/x86/boot/bzImage \
		$(GUEST)/initramfs.cpio.gz $(KASAN_DIR)/guest test $(KASAN_BOOT_TIMEOUT); \
		echo $$? >$(KASAN_DIR)/guest/rc
	@python3 -c 'import sys; from harness import results as r; \
		logs = sys.argv[1]; k = r.Suite("kasan: KASAN on in the guest"); \
		con = r.read(logs + "/guest/console.log") or []; \
		k.add(any("KernelAddressSanitizer initialized" in l for l in con), note="no KASAN banner in the console"); \
		p, f, _ = r.summary([k] + r.guest(logs)); \
		print("logs: " + logs); print(f"{p} passed, {f} failed"); sys.exit(1 if f else 0)' $(KASAN_DIR)

# Boot with virtme-ng (under TCG unless KVM works) and run the kselftests
# with run_kselftest.sh: TAP on the terminal and in $(VNG_DIR)/run/results.log,
# the kernel log in $(VNG_DIR)/run/console.log, then one summary line a suite.
vng: vng-deps kernel-vng kselftest-vng
	@VNG_ACCEL=$(VNG_ACCEL) harness/run-vng.sh $(VENV) $(OUT_VNG)/arch/x86/boot/bzImage \
		$(KSFT_VNG) $(VNG_DIR)/run $(BOOT_TIMEOUT) $(VNG_TEST_TIMEOUT) $(KSFT_ARGS)

# The production configuration with the unwinder off.
$(OUT_OFF)/.config: $(TEST_CONFIG) harness/configs/prod.config harness/configs/prod-off.config \
		$(wildcard kernel/unwind_user/Kconfig) | apply
	$(call kconfig,$(OUT_OFF),$(TEST_CONFIG),$(KMAKE_OFF),harness/configs/prod.config harness/configs/prod-off.config,harness/configs/prod-off.config)

kernel-prod-off: apply $(OUT_OFF)/.config
	$(KMAKE_OFF) bzImage
	@echo "kernel-prod-off: $(OUT_OFF)/arch/x86/boot/bzImage"

kernel-prod: apply $(OUT_PROD)/.config
	$(KMAKE_PROD) bzImage
	@echo "kernel-prod: $(OUT_PROD)/arch/x86/boot/bzImage"

kernel: config
	$(KMAKE) bzImage
	@echo "kernel: $(OUT)/arch/x86/boot/bzImage"

corpus: $(CORPUS)/MANIFEST

# generate.sh writes MANIFEST last: a run that failed leaves none.
$(CORPUS)/MANIFEST: $(CORPUS_SRCS)
	UNWIND_USER_TOOLCHAINS=$(KBUILD_DIR)/toolchains $(CORPUS)/generate.sh

host-test: corpus
	cd rust/sframe && cargo test --release 2>&1 | tee $(HOST_TEST_LOG)
	cd tools/unwind_user/sframe_synth && cargo test --release 2>&1 | tee -a $(HOST_TEST_LOG)
	$(MAKE) -s -C tools/unwind_user/python OUTPUT=$(KBUILD_DIR)/pyassist/ \
		KHDR_INCLUDES=-I$(CURDIR)/include/uapi test 2>&1 | tee $(PY_TEST_LOG)

# The kernel's own clippy lints (CLIPPY=1) on the series' Rust: one of make
# check's lints (harness/check.sh).
kernel-clippy: config
	$(KMAKE) CLIPPY=1 CLIPPY_DRIVER=/usr/bin/clippy-driver kernel/unwind_user/ rust/sframe.o

selftests: config
	$(KMAKE) headers_install INSTALL_HDR_PATH=$(OUT)/usr >/dev/null
	rm -rf $(GUEST)/selftests && mkdir -p $(GUEST)/selftests
	$(MAKE) -C $(SRC)/tools/testing/selftests/unwind_user \
		OUTPUT=$(GUEST)/selftests KHDR_INCLUDES="-isystem $(OUT)/usr/include"
	$(MAKE) producers
	cp $(PRODUCERS)/*_test $(GUEST)/selftests/
	harness/stage-audit.sh $(GUEST)/selftests "-isystem $(OUT)/usr/include" $(SYNTH_LIBS)
	printf '%s\n' $(SYNTH_LIBS) >$(GUEST)/selftests/extra-libs

# The deep-chain test built by trixie's and sid's binutils and by clang-22
# (harness/producers/build.sh); their toolchains are kept in $(KBUILD_DIR).
producers: $(PRODUCERS)/MANIFEST

$(PRODUCERS)/MANIFEST: $(PRODUCER_SRCS)
	KBUILD_DIR=$(KBUILD_DIR) UNWIND_USER_TOOLCHAINS=$(KBUILD_DIR)/toolchains \
		harness/producers/build.sh $(PRODUCERS)

initramfs: selftests
	harness/mkinitramfs.sh $(GUEST) $(GUEST)/initramfs.cpio.gz

# check.sh runs make host-test, kernel-clippy and demo (the demo at host time,
# DEMO_SECONDS=3, in its logs) itself.
check: kernel initramfs series perf corpus
	@MAKE='$(MAKE)' harness/check.sh $(REPO) $(KBUILD_DIR) $(BOOT_TIMEOUT)

perf: apply
	@harness/build-perf.sh $(SRC) $(KBUILD_DIR)/perf

# Its own initramfs (busybox, perf, the workload), its own outputs (in
# DEMO_OUT).
demo: kernel perf
	@GUEST_ICOUNT=$(DEMO_ICOUNT) demo/run-demo.sh $(OUT)/arch/x86/boot/bzImage $(KBUILD_DIR)/perf/build/perf \
		$(DEMO_OUT) $(BOOT_TIMEOUT)

# Three unmodified Debian programs, the kernel's unwind of each sample
# against perf's DWARF unwind of the same sample (demo/run-oracle.sh).
oracle: kernel perf
	@harness/install-deps.sh oracle >/dev/null
	@GUEST_ICOUNT=$(DEMO_ICOUNT) demo/run-oracle.sh $(OUT)/arch/x86/boot/bzImage $(KBUILD_DIR)/perf/build/perf \
		$(KBUILD_DIR)/oracle $(BOOT_TIMEOUT)

# A machine whose Debian programs were started before profiling, profiled
# as a whole before and after one run of the agent: the kernel's unwind
# of each sample against perf's DWARF unwind, per program
# (demo/run-system.sh). make check runs it.
system: kernel perf
	@harness/install-deps.sh oracle >/dev/null
	@GUEST_ICOUNT=$(SYSTEM_ICOUNT) demo/run-system.sh $(OUT)/arch/x86/boot/bzImage $(KBUILD_DIR)/perf/build/perf \
		$(SYSTEM_OUT) $(BOOT_TIMEOUT)

# The provider's systemd unit on a machine that boots with systemd as PID 1:
# a debootstrap'ed Debian 12 root (kept in $(SYSTEMD_DIR)/base, copied per
# run) with sframe-synth, its unit enabled, perf and a test unit that
# checks the unit's sandboxing, the late programs' stacks against DWARF's,
# a SIGKILL'ed provider restarted, the journal and the kernel log
# (demo/run-systemd.sh). Root only (debootstrap, chroot, the 9p root's
# owners); a few minutes warm under TCG: not part of make check.
systemd: kernel-systemd perf
	@harness/install-deps.sh systemd >/dev/null
	@demo/run-systemd.sh $(OUT_SD)/arch/x86/boot/bzImage $(KBUILD_DIR)/perf/build/perf \
		$(SYSTEMD_DIR) $(SYSTEMD_TIMEOUT)

# What a table attached to every object costs a program's start: make
# system without its "before" recording, on the production kernel, the
# guest's clock counting instructions: curl's start-up (30 starts a
# measurement) with and without its objects' tables, and the recording
# after the agent, checked as make system checks it.
startup: kernel-prod perf
	@harness/install-deps.sh oracle >/dev/null
	@GUEST_ICOUNT=$(BENCH_ICOUNT) SYSTEM_BEFORE=0 SYSTEM_STARTUP_RUNS=30 \
		demo/run-system.sh $(OUT_PROD)/arch/x86/boot/bzImage $(KBUILD_DIR)/perf/build/perf \
		$(KBUILD_DIR)/startup $(BOOT_TIMEOUT)

# SFrame against frame pointers and DWARF, one boot of the production
# kernel; its own initramfs and outputs, results.md in $(KBUILD_DIR)/bench.
# bench-debug: the same on the debug test kernel (correctness, not speed).
bench: kernel-prod perf
	@GUEST_ICOUNT=$(BENCH_ICOUNT) KSRC=$(SRC) bench/run-bench.sh $(OUT_PROD)/arch/x86/boot/bzImage \
		$(KBUILD_DIR)/perf/build/perf $(KBUILD_DIR)/bench $(BOOT_TIMEOUT) $(OUT_PROD)/vmlinux

# What exec, mmap and fork cost a machine with the unwinder built in that
# does not profile: the production kernel against the same without the
# unwinder, one boot each (bench/hooks/). Not part of make check.
bench-hooks: kernel-prod kernel-prod-off
	@GUEST_ICOUNT=$(BENCH_ICOUNT) bench/hooks/run-hooks.sh $(OUT_PROD)/arch/x86/boot/bzImage \
		$(OUT_OFF)/arch/x86/boot/bzImage $(KBUILD_DIR)/bench-hooks $(BOOT_TIMEOUT)

bench-debug: kernel perf
	@GUEST_ICOUNT=$(BENCH_ICOUNT) KSRC=$(SRC) bench/run-bench.sh $(OUT)/arch/x86/boot/bzImage \
		$(KBUILD_DIR)/perf/build/perf $(KBUILD_DIR)/bench-debug $(BOOT_TIMEOUT) $(OUT)/vmlinux

# Where the instructions of an SFrame walk go: one boot of the production
# kernel under a QEMU plugin that counts the kernel's instructions per
# unwind (bench/profile/). PROFILE: the unwind_bench command ("cold_file 4
# 200", "step 200 50 1", "uncovered 200 50 1"); ANNOTATE: a function to
# disassemble with its counts.
profile: kernel-prod
	@GUEST_ICOUNT=$(BENCH_ICOUNT) PROFILE="$(PROFILE)" ANNOTATE="$(ANNOTATE)" \
		bench/profile/run-profile.sh $(OUT_PROD)/arch/x86/boot/bzImage \
		$(KBUILD_DIR)/profile $(BOOT_TIMEOUT) $(OUT_PROD)/vmlinux $(OUT_PROD)/System.map

boot: kernel initramfs
	harness/run-guest.sh $(OUT)/arch/x86/boot/bzImage $(GUEST)/initramfs.cpio.gz \
		$(GUEST)/boot shell 0

series: apply
	@rm -rf $(SERIES_DIR)
	@git -C $(SRC) format-patch -q --no-signature -o $(SERIES_DIR) pristine..HEAD
	@echo "series: $$(ls $(SERIES_DIR) | wc -l) patches in $(SERIES_DIR)"

# Every prefix of the series builds (harness/bisect-check.sh): one
# incremental build a patch in $(KBUILD_DIR)/build-bisect. Not part of
# make check.
bisect-check: apply
	@harness/bisect-check.sh $(REPO) $(KBUILD_DIR) $(JOBS)

# A new Debian 12 root under $(KBUILD_DIR)/fresh-root, the clone of HEAD
# and `make check` inside it. Root only (debootstrap, chroot).
fresh-root:
	@harness/install-deps.sh fresh-root >/dev/null
	@harness/fresh-root.sh $(REPO) $(KBUILD_DIR)/fresh-root

clean-build:
	rm -rf $(OUT) $(OUT_PROD) $(OUT_VNG) $(VNG_DIR) $(OUT_KASAN) $(KASAN_DIR) $(OUT_SD) $(GUEST) $(SERIES_DIR) \
		$(OUT_ARM64) $(ARM64_DIR)
