# drivefs: build, test, demo. `make test` and `make demo` install what is missing first.
SHELL := /bin/bash
SWIFT ?= swift
PREFIX ?= /usr/local
CONFIG ?= debug
BIN := .build/$(CONFIG)
# Debian packages: build (libraries), mount (fuse3), extended attributes (attr: getfattr), man page and completion checks (man-db, zsh), demo (curl), interop tests (rclone, iproute2, openssl, python3-venv).
DEB_PACKAGES := fuse3 libfuse3-dev libcurl4-openssl-dev libssl-dev pkg-config openssl ca-certificates curl attr man-db zsh \
	rclone iproute2 util-linux python3-venv
# google-api-python-client for the interop tests, in a venv of our own.
VENV := .build/interop-venv
PY_PACKAGES := google-api-python-client==2.* google-auth==2.*

.PHONY: all deps build test demo install bench clean

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@if [ ! -x $(VENV)/bin/python ] || ! $(VENV)/bin/python -c "import googleapiclient, google.oauth2" 2>/dev/null; then \
		echo "make deps: preparing $(VENV)"; \
		mkdir -p .build && python3 -m venv $(VENV) && $(VENV)/bin/pip install -q --disable-pip-version-check $(PY_PACKAGES); \
	fi

build:
	$(SWIFT) build -c $(CONFIG)

# XCTest only: without --disable-swift-testing the last line would be Swift Testing's "0 tests".
test: deps
	$(SWIFT) build --build-tests
	DRIVEFS_PYTHON=$(CURDIR)/$(VENV)/bin/python $(SWIFT) test --disable-swift-testing

demo: deps build
	./scripts/demo.sh $(BIN)

# Installs optimised binaries, whatever CONFIG says, with the mount(8) helper (mount(8) looks in
# /sbin only), the man page, shell completion and the systemd user unit (docs/fstab.md, docs/systemd.md).
SBINDIR ?= /sbin
install:
	$(SWIFT) build -c release
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

bench: deps
	$(SWIFT) build -c release
	./scripts/bench.sh .build/release

clean:
	rm -rf .build
