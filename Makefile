# mt — Intel PT call timelines as Unix filters.
# `make demo` and `make check` install missing Debian packages (as root),
# build, and run. `make SAN=1 ...` builds with ASan+UBSan into build-san/.

# Every core (a -j on the command line still wins): the build is most of
# make check's first minutes on 2 cores.
MAKEFLAGS += -j$(shell nproc)

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
SAN ?=

DEB_PACKAGES := gcc make pkg-config libipt-dev libelf-dev libdw-dev libarchive-dev zlib1g-dev libiberty-dev \
	libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libcapstone-dev bats parallel linux-perf python3 time \
	libdebuginfod-dev debuginfod shellcheck bzip2 openssh-server rsync \
	libsqlite3-dev sqlite3 uftrace chromium libzstd-dev zstd strace

ifeq ($(FUZZ),1)
# libFuzzer harnesses (make fuzz): clang, the library instrumented for it
CC := clang
BUILD := build-fuzz
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1 -g
else ifeq ($(SAN),1)
BUILD := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1 -g
else
BUILD := build
SANFLAGS :=
OPT := -O2 -g
endif

# libdebuginfod is not linked: its header gives the types, the library is
# loaded when a run asks for a server (lib/objects/debuginfod.h)
PKGS := libelf libdw libarchive capstone libprotobuf-c zlib sqlite3 libzstd
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libarchive is not linked either: it is loaded the first time a bundle is
# read or written (lib/bundle/archive_lib.h), its headers give the types
PKG_LIBS = $(shell pkg-config --libs $(filter-out libarchive,$(PKGS)) 2>/dev/null)
# Debian's libipt-dev ships no .pc file.
IPT_LIBS = $(shell pkg-config --libs libipt 2>/dev/null || echo -lipt)
# libiberty (the demangler binutils uses) ships a static library, no .pc.
IBERTY_LIBS = -liberty

CFLAGS ?= $(OPT)
override CFLAGS += -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-D_FILE_OFFSET_BITS=64 -Ilib -I$(BUILD)/gen $(PKG_CFLAGS) $(SANFLAGS)
# --as-needed in every build (gcc's default here, but not with the
# sanitizers): a tool records only the libraries it calls, so
# mt-pt2events starts without Capstone's relocations (trace/csload.c).
LDFLAGS += $(SANFLAGS) -Wl,--as-needed
LDLIBS = $(IPT_LIBS) $(PKG_LIBS) $(IBERTY_LIBS)

LIB_SRCS := $(wildcard lib/*/*.c)
PROTOS := $(wildcard proto/*.proto)
GEN_SRCS := $(PROTOS:proto/%.proto=$(BUILD)/gen/%.pb-c.c)
GEN_HDRS := $(GEN_SRCS:.c=.h)
LIB_OBJS := $(LIB_SRCS:lib/%.c=$(BUILD)/lib/%.o) $(GEN_SRCS:$(BUILD)/gen/%.c=$(BUILD)/gen/%.o)
TOOLS := mt-caps mt-perfargs mt-record mt-pt2events mt-events mt-symbolize mt-toperfetto mt-synth mt-bundle mt-report mt-view
TOOL_BINS := $(TOOLS:%=$(BUILD)/bin/%)
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)
TESTTOOL_SRCS := $(wildcard tests/tools/*.c)
TESTTOOL_BINS := $(TESTTOOL_SRCS:tests/tools/%.c=$(BUILD)/testtools/%)
FUZZERS := $(patsubst fuzz/fuzz_%.c,%,$(filter-out fuzz/fuzz_common.c,$(wildcard fuzz/fuzz_*.c)))
REPLAY_BINS := $(FUZZERS:%=$(BUILD)/fuzz/replay_%)
FUZZ_TIME ?= 60
PROG_SRCS := $(wildcard testdata/progs/*.c)
PROG_BINS := $(PROG_SRCS:testdata/progs/%.c=$(BUILD)/progs/%)
MANS := $(wildcard doc/*.1 doc/*.5 doc/*.7)

# mt-view's viewer: speedscope from the npm registry, the version mt-view names
SPEEDSCOPE_VERSION := $(shell sed -n 's/^\#define SPEEDSCOPE_VERSION "\(.*\)"/\1/p' tools/mt-view.c)
VIEWER := $(BUILD)/viewer/node_modules/speedscope/dist/release/index.html

.PHONY: all deps demo check test unit bats install clean fuzz fuzz-run viewer
.SECONDARY: $(GEN_SRCS) $(GEN_HDRS)
all: $(TOOL_BINS) $(PROG_BINS)

deps:
	@./tests/ensure-deps $(DEB_PACKAGES)

$(BUILD)/lib/%.o: lib/%.c $(wildcard lib/*/*.h) $(GEN_HDRS) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# Protobuf code is generated at build time, never committed.
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto | deps
	@mkdir -p $(@D)
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen $<

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c $(GEN_HDRS)
	$(CC) $(CFLAGS) -Wno-shadow -c -o $@ $<

$(BUILD)/libmt.a: $(LIB_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/bin/%: tools/%.c $(BUILD)/libmt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libmt.a $(LDLIBS)

$(BUILD)/testtools/%: tests/tools/%.c $(BUILD)/libmt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libmt.a $(LDLIBS)

$(BUILD)/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(BUILD)/libmt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libmt.a $(LDLIBS)

# Saved fuzz inputs run without libFuzzer (make check), any compiler.
$(BUILD)/fuzz/replay_%: fuzz/replay.c fuzz/fuzz_%.c fuzz/fuzz_common.c fuzz/fuzz.h $(BUILD)/libmt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ifuzz $(LDFLAGS) -o $@ fuzz/replay.c fuzz/fuzz_$*.c fuzz/fuzz_common.c $(BUILD)/libmt.a $(LDLIBS)

# libFuzzer binaries (FUZZ=1 builds only)
$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_common.c fuzz/fuzz.h $(BUILD)/libmt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ifuzz -fsanitize=fuzzer -o $@ fuzz/fuzz_$*.c fuzz/fuzz_common.c $(BUILD)/libmt.a $(LDLIBS)

# make fuzz: every harness for FUZZ_TIME seconds (default 60), seeded from
# testdata, the synthesized fixtures and ../shared/testdata/real; a crash
# stops it with the input saved in build-fuzz/crashes/NAME/.
fuzz: all
	@./tests/ensure-deps clang
	@$(MAKE) --no-print-directory FUZZ=1 fuzz-run

fuzz-run: $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
	@./fuzz/run $(BUILD) $(FUZZ_TIME) $(FUZZERS)

# Test programs: built plainly (no sanitizers: they are traced, not tested),
# without PIE for the static ones so addresses are stable.
# A program's "// cflags:" line goes to compiling and linking, its
# "// compile-only:" line to compiling alone (calls_pg: fentry hooks
# without -pg's start-up code).
$(BUILD)/progs/%: testdata/progs/%.c | deps
	@mkdir -p $(@D) $(BUILD)/progs-obj
	$(CC) -O1 -g -fno-inline -fcf-protection=none -c -o $(BUILD)/progs-obj/$*.o $< \
		$(shell sed -n 's,^// cflags: ,,p' $<) $(shell sed -n 's,^// compile-only: ,,p' $<)
	$(CC) -O1 -g -o $@ $(BUILD)/progs-obj/$*.o $(shell sed -n 's,^// cflags: ,,p' $<)

viewer: $(VIEWER)
$(VIEWER): tools/mt-view.c | deps
	@command -v npm > /dev/null || ./tests/ensure-deps nodejs npm
	npm install --prefix $(BUILD)/viewer --no-audit --no-fund --no-save --loglevel=error speedscope@$(SPEEDSCOPE_VERSION)
	@test -f $@ && touch $@

demo: all $(VIEWER)
	@./pipelines/demo $(BUILD)

check: all $(VIEWER) $(UNIT_BINS) $(TESTTOOL_BINS) $(REPLAY_BINS)
	@BUILD=$(BUILD) ./tests/run

install: all $(VIEWER)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/mt/speedscope
	cp -R $(dir $(VIEWER)). $(DESTDIR)$(PREFIX)/share/mt/speedscope/
	install -m 755 $(TOOL_BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 pipelines/mt-trace pipelines/mt-batch pipelines/mt-archive-watch $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard doc/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(wildcard doc/*.5) $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 $(wildcard doc/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/
	@# man -k mt- finds them: the index made again where there is one (not for a staged DESTDIR)
	@if [ -z "$(DESTDIR)" ] && command -v mandb > /dev/null; then mandb -q $(DESTDIR)$(PREFIX)/share/man || true; fi

clean:
	rm -rf build build-san build-fuzz demo.events
