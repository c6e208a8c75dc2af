# gsvfs — build, run, test, benchmark and install.

GO       ?= go
PREFIX   ?= /usr/local
MANDIR   ?= $(PREFIX)/share/man
MOUNTPOINT ?= $(HOME)/gsv
STATE    ?=
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)

.PHONY: all build run test vet bench install uninstall clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/gsvfs ./cmd/gsvfs

# Serve a state directory and mount it at $(MOUNTPOINT): STATE=DIR, or
# the default one (root's /var/lib/gsvfs is the whole machine's, so a
# second root `make run` attaches to whatever daemon serves it).
run: build
	mkdir -p $(MOUNTPOINT)
	./bin/gsvfs mount $(if $(STATE),--root $(STATE)) $(MOUNTPOINT)

vet:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then \
		echo "gofmt wants to change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	# The device side runs on laptops: every package builds and vets for
	# macOS and linux/arm64 (FUSE and the tests that mount are Linux-only).
	GOOS=linux GOARCH=arm64 $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=darwin GOARCH=amd64 $(GO) build ./...

# The whole suite: unit tests, FUSE integration tests (real mounts), and
# go-fuse's posixtest against the mount. Needs root or fusermount3, and
# /dev/fuse; tests that cannot run here say so loudly.
test: vet
	mandoc -T lint -W warning docs/man/*.[1-8]
	$(GO) test -count=1 -timeout 25m ./...

# Go benchmarks, the FUSE comparison against native disk, the same as an
# ordinary user's mount (userbench: a throwaway user), what watching
# the state directory buys warm metadata (watchbench), the 9P
# comparisons against diod (a Go client, then the Linux client in qemu),
# /proc sessions (round trips, one-shots, idle cost), a device's files
# through a gateway against direct, with added network delay, and a
# device's tree through a gateway against sshfs (remotebench).
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...
	bash bench/fusebench.sh
	bash bench/userbench.sh
	bash bench/watchbench.sh
	bash bench/ninepbench.sh
	bash bench/vm9pbench.sh
	bash bench/procbench.sh
	bash bench/devicebench.sh
	bash bench/remotebench.sh

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7
	install -m 0755 bin/gsvfs $(DESTDIR)$(PREFIX)/bin/gsvfs
	install -m 0644 docs/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 docs/man/*.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 docs/man/*.7 $(DESTDIR)$(MANDIR)/man7/
	printf '.so man1/gsvfs-mount.1\n' > $(DESTDIR)$(MANDIR)/man1/gsvfs-umount.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/gsvfs $(DESTDIR)$(MANDIR)/man1/gsvfs-umount.1
	for page in docs/man/*.1; do rm -f $(DESTDIR)$(MANDIR)/man1/$${page##*/}; done
	for page in docs/man/*.5; do rm -f $(DESTDIR)$(MANDIR)/man5/$${page##*/}; done
	for page in docs/man/*.7; do rm -f $(DESTDIR)$(MANDIR)/man7/$${page##*/}; done

clean:
	rm -rf bin
