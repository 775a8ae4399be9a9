# dovetail — build, test, bench, install.
#   make deps            install Debian build and test dependencies (apt-get)
#   make / make all      dovetail, libdovetail.a/.so, dovetail.so (Lua module)
#   make test            busted specs (Lua 5.4), luacheck, C unit tests
#   make test SANITIZE=1 the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench           benchmarks (pods/s, nodes, $/h, peak memory)
#   make fuzz            libFuzzer targets (clang), each for FUZZ_SECONDS (default 60) on fuzz/corpus/
#   make install         PREFIX=/usr/local DESTDIR= (LIBDIR, LUA_CMOD_DIR, ZSH_COMPDIR, ... below)
#   make deb             Debian packages into build/deb/ (dpkg-buildpackage on a copy of the tree)

PREFIX  ?= /usr/local
DESTDIR ?=
# Where make install puts things. Debian's packaging sets the multiarch
# library directory and zsh's vendor-completions directory.
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LUA_CMOD_DIR ?= $(LIBDIR)/lua/5.4
MANDIR  ?= $(PREFIX)/share/man
BASH_COMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSH_COMPDIR ?= $(PREFIX)/share/zsh/site-functions
DATADIR ?= $(PREFIX)/share/dovetail
VERSION := $(shell sed -n 's/^\#define DT_VERSION "\(.*\)"/\1/p' engine/dovetail.h)
CC      ?= cc
LUA     ?= lua5.4
SANITIZE ?=

PKGS    := lua5.4 libcjson yaml-0.1
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ifeq ($(strip $(PKG_LIBS)),)
PKG_CFLAGS := -I/usr/include/lua5.4
PKG_LIBS   := -llua5.4 -lcjson -lyaml
endif

ifeq ($(SANITIZE),1)
BUILD   := build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1 -g
else
BUILD   := build/rel
SANFLAGS :=
OPT     := -O2 -g
endif

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation
CFLAGS  ?=
CPPFLAGS ?=
LDFLAGS ?=
# LUA_INCDIR: another Lua 5.4's headers (LuaRocks passes its own).
LUA_INCDIR ?=
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(WARN) -fPIC -fvisibility=hidden -MMD -MP $(SANFLAGS) \
	      $(if $(LUA_INCDIR),-I$(LUA_INCDIR)) $(PKG_CFLAGS) -Iengine $(CPPFLAGS) $(CFLAGS)
LDLIBS  := $(PKG_LIBS) -lm -lpthread

CATALOG := providers/catalogs/aws-us-east-1.json
CATALOG_AZURE := providers/catalogs/azure-eastus.json
ENGINE_SRC := engine/alloc.c engine/quantity.c engine/sym.c engine/req.c engine/doc.c engine/topo.c engine/lp.c engine/pack.c engine/pack_cg.c engine/pack_fill.c engine/pack_knap.c engine/explain.c engine/explain_offers.c \
	      engine/model.c engine/manifest.c engine/mf_nodepool.c engine/mf_nodeclass.c engine/mf_pod.c engine/mf_spread.c engine/mf_buffer.c engine/mf_overlay.c engine/mf_kubevirt.c engine/sched_overlay.c engine/sched.c engine/sched_compile.c engine/sched_pods.c engine/sched_solve.c engine/sched_diag.c engine/sched_launch.c engine/plan.c engine/plan_result.c engine/pool.c engine/cron.c engine/disrupt.c engine/disrupt_sim.c engine/disrupt_methods.c engine/disrupt_out.c engine/pool_out.c engine/store.c engine/podcache.c providers/catalog.c providers/catalog_out.c providers/kwok.c lua/policy.c lua/hooks.c
ENGINE_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(ENGINE_SRC)) $(BUILD)/providers/bundled.o
LUA_OBJ := $(BUILD)/lua/ldovetail.o
HEADERS := $(wildcard engine/*.h)

BIN     := $(BUILD)/dovetail
LIBA    := $(BUILD)/libdovetail.a
LIBSO   := $(BUILD)/libdovetail.so
LUAMOD  := $(BUILD)/dovetail.so

.PHONY: all deps test check-lua check-c bench install install-lua lua-module deb clean quickstart fuzz

all: $(BIN) $(LIBA) $(LIBSO) $(LUAMOD)
	@ln -sf $(BUILD)/dovetail dovetail 2>/dev/null || true

# Every object depends on the headers it includes (-MMD -MP writes them down).
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

-include $(shell find build -name '*.d' 2>/dev/null)

$(BUILD)/providers/bundled.o: providers/bundled.S $(CATALOG) $(CATALOG_AZURE)
	@mkdir -p $(dir $@)
	$(CC) -c -DDT_CATALOG_PATH='"$(CATALOG)"' -DDT_CATALOG_AZURE_PATH='"$(CATALOG_AZURE)"' $< -o $@

$(LIBA): $(ENGINE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(LIBSO): $(ENGINE_OBJ)
	$(CC) -shared $(SANFLAGS) $(LDFLAGS) -Wl,-soname,libdovetail.so.0 -o $@ $^ $(LDLIBS)

# The daemon (serve.c) links h2o and libuv; the library does not need them.
CMD_OBJ := $(BUILD)/engine/main.o $(BUILD)/engine/catalogcmd.o $(BUILD)/engine/serve.o $(BUILD)/engine/api.o $(BUILD)/engine/controller.o \
	 $(BUILD)/engine/ctl_store.o $(BUILD)/engine/ctl_launch.o $(BUILD)/engine/ctl_claims.o $(BUILD)/engine/ctl_disrupt.o \
	 $(BUILD)/engine/ctl_vmpools.o $(BUILD)/engine/httpd.o $(BUILD)/engine/httpc.o \
	 $(BUILD)/providers/sim.o $(BUILD)/providers/http.o $(BUILD)/providers/fakecloud.o $(BUILD)/providers/advisor.o
SIM_OBJ := $(BUILD)/engine/simulate.o $(BUILD)/engine/sim_scenario.o $(BUILD)/engine/sim_report.o \
	   $(BUILD)/engine/sim_main.o
$(BIN): $(CMD_OBJ) $(SIM_OBJ) $(BUILD)/engine/sim_fault.o $(LIBA)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lh2o -luv -lcurl -lz

$(BUILD)/providers/advisor.o: providers/advisor.S providers/catalogs/aws-spot-advisor-us-east-1.json
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

# The command again, with the simulator's invariant checks breakable on
# purpose (DOVETAIL_SIM_FAULT): the specs show that --check catches each.
$(BUILD)/engine/sim_fault-on.o: engine/sim_fault.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DDT_SIM_FAULTS -c $< -o $@

$(BUILD)/dovetail-faults: $(CMD_OBJ) $(SIM_OBJ) $(BUILD)/engine/sim_fault-on.o $(LIBA)
	$(CC) $(SANFLAGS) -o $@ $^ $(LDLIBS) -lh2o -luv -lcurl -lz

# The Lua module links the engine statically: `require "dovetail"` needs
# nothing else installed. Lua symbols come from the host interpreter.
$(LUAMOD): $(LUA_OBJ) $(ENGINE_OBJ)
	$(CC) -shared $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(filter-out -llua5.4,$(LDLIBS))

# The Lua module alone, for LuaRocks (dovetail-*.rockspec builds it with
# BUILD=build/rock and installs it with LUA_CMOD_DIR set to the rock's tree).
lua-module: $(LUAMOD)

install-lua: $(LUAMOD)
	install -d $(DESTDIR)$(LUA_CMOD_DIR)
	install -m 755 $(LUAMOD) $(DESTDIR)$(LUA_CMOD_DIR)/dovetail.so

$(BUILD)/embed: examples/embed.c $(LIBA)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBA) $(LDLIBS) $(SANFLAGS)

examples/embed: $(BUILD)/embed
	cp $< $@

$(BUILD)/unit: spec/unit.c $(LIBA)
	$(CC) $(ALL_CFLAGS) -Iengine -Iproviders -o $@ $< $(LIBA) $(LDLIBS) $(SANFLAGS)

deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends \
	  build-essential pkg-config liblua5.4-dev lua5.4 libuv1-dev libcurl4-openssl-dev \
	  libcjson-dev libyaml-dev libh2o-dev libssl-dev zlib1g-dev curl lua-busted lua-check glpk-utils libglpk-dev \
	  clang libclang-rt-dev tzdata debhelper dpkg-dev fakeroot luarocks lua-yaml chromium >/dev/null

# Build on demand when the toolchain's libraries are missing (fresh machine).
.deps-ok:
	@if ! pkg-config --exists lua5.4 libcjson yaml-0.1 libuv libcurl 2>/dev/null || ! test -f /usr/include/h2o.h \
	    || ! command -v busted >/dev/null || ! command -v curl >/dev/null \
	    || ! command -v dh >/dev/null || ! command -v luarocks >/dev/null || ! command -v chromium >/dev/null; then \
	  $(MAKE) --no-print-directory deps; fi
	@touch $@

quickstart: .deps-ok
	@$(MAKE) --no-print-directory all
	./$(BIN) plan -o table examples/quickstart.yaml

SAN_ENV := $(if $(filter 1,$(SANITIZE)),LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1,)

test: .deps-ok
	@$(MAKE) --no-print-directory all $(BUILD)/unit $(BUILD)/embed $(BUILD)/dovetail-faults
	@# the benchmarks are built too, so that a change that breaks them fails here
	@test -f /usr/include/glpk.h || $(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(BUILD)/bench $(BUILD)/load
	@rm -f $(BUILD)/results.txt
	@echo "== C unit tests"; \
	  if ASAN_OPTIONS=detect_leaks=1 ./$(BUILD)/unit > $(BUILD)/unit.out 2>&1; then :; fi; \
	  cat $(BUILD)/unit.out; tail -1 $(BUILD)/unit.out | sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$$/\1 \2/p' >> $(BUILD)/results.txt
	@echo "== luacheck"; \
	  if luacheck -q --formatter plain $$(git ls-files '*.lua' 2>/dev/null || find . -name '*.lua' -not -path './build/*') > $(BUILD)/luacheck.out 2>&1; \
	  then echo "luacheck: clean"; echo "1 0" >> $(BUILD)/results.txt; \
	  else cat $(BUILD)/luacheck.out; echo "0 1" >> $(BUILD)/results.txt; fi
	@echo "== busted (Lua 5.4)"; \
	  DOVETAIL_BUILD=$(BUILD) $(SAN_ENV) $(LUA) /usr/bin/busted --lua=$(LUA) -o utfTerminal spec > $(BUILD)/busted.out 2>&1; \
	  cat $(BUILD)/busted.out; \
	  sed 's/\x1b\[[0-9;]*m//g' $(BUILD)/busted.out | sed -n 's/^\([0-9]*\) success[es]* \/ \([0-9]*\) failure[s]* \/ \([0-9]*\) error[s]*.*/\1 \2 \3/p' | tail -1 | awk '{print $$1, $$2+$$3}' >> $(BUILD)/results.txt
	@awk 'BEGIN{p=0;f=0;n=0} {p+=$$1; f+=$$2; n++} END{ if (n<3) f+=1; printf "%d passed, %d failed\n", p, f; exit (f>0 || p==0) }' $(BUILD)/results.txt

bench: .deps-ok
	@test -f /usr/include/glpk.h || $(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all $(BUILD)/bench $(BUILD)/load
	./$(BUILD)/bench
	@case "$${DOVETAIL_BENCH_ONLY:-load}" in load) ./$(BUILD)/load $(BUILD)/dovetail;; esac
	@case "$${DOVETAIL_BENCH_ONLY:-simulate}" in simulate) sh bench/simulate.sh $(BUILD)/dovetail;; esac

# Fuzzing: every engine file built again with clang under libFuzzer, ASan and
# UBSan; each target runs for FUZZ_SECONDS on its corpus in fuzz/corpus/,
# which it grows. A crash, a leak or an input slower than FUZZ_TIMEOUT fails
# the run and leaves the input in build/fuzz/artifacts/. The limit is wall
# time on a CI machine that may be loaded: a corpus input of the policy
# target took from 0.17 to 0.56 s on two loaded cores, and the target's own
# budgets let one input run 200 ms per failing hook call, up to five
# failures for each of seven hooks. So 10 s; inputs over 1 s are reported
# in the log (-report_slow_units).
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_TARGETS := quantity cron manifest catalog policy state http scale
FUZZ_CC     := clang
FUZZ_FLAGS  := -std=c11 -D_POSIX_C_SOURCE=200809L -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	       -fno-sanitize-recover=undefined $(PKG_CFLAGS) -Iengine
FUZZ_OBJ    := $(patsubst %.c,build/fuzz/obj/%.o,$(ENGINE_SRC)) build/fuzz/obj/providers/bundled.o

.SECONDARY: $(FUZZ_OBJ)

build/fuzz/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build/fuzz/obj/providers/bundled.o: providers/bundled.S $(CATALOG) $(CATALOG_AZURE)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -c -DDT_CATALOG_PATH='"$(CATALOG)"' -DDT_CATALOG_AZURE_PATH='"$(CATALOG_AZURE)"' $< -o $@

build/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LDLIBS)

fuzz: .deps-ok $(addprefix build/fuzz/fuzz_,$(FUZZ_TARGETS))
	@mkdir -p build/fuzz/artifacts
	@for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; mkdir -p fuzz/corpus/$$t; \
	  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ./build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) -report_slow_units=1 -rss_limit_mb=2048 -max_len=65536 \
	    -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/$$t- fuzz/corpus/$$t > build/fuzz/$$t.log 2>&1 \
	    || { tail -60 build/fuzz/$$t.log; exit 1; }; \
	  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build/fuzz/$$t.log | tr '\n' ' '; echo; \
	done

$(BUILD)/load: bench/load.c
	$(CC) $(ALL_CFLAGS) -o $@ $< -lcurl

$(BUILD)/bench: bench/bench.c $(LIBA)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBA) $(LDLIBS) -lglpk

# The library as shared libraries are installed: the file carries the full
# version, libdovetail.so.0 (its soname) and libdovetail.so (for -ldovetail)
# point at it. dovetail.pc's libdir and includedir are written relative to
# ${prefix} when they lie under PREFIX, so a tree moved elsewhere can be used
# with --define-variable=prefix=.
PC_REL = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
	  $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(LUA_CMOD_DIR) $(DESTDIR)$(DATADIR)/policies $(DESTDIR)$(DATADIR)/catalogs \
	  $(DESTDIR)$(BASH_COMPDIR) $(DESTDIR)$(ZSH_COMPDIR)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/dovetail
	install -m 644 $(LIBA) $(DESTDIR)$(LIBDIR)/libdovetail.a
	install -m 755 $(LIBSO) $(DESTDIR)$(LIBDIR)/libdovetail.so.$(VERSION)
	ln -sf libdovetail.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libdovetail.so.0
	ln -sf libdovetail.so.0 $(DESTDIR)$(LIBDIR)/libdovetail.so
	install -m 644 engine/dovetail.h $(DESTDIR)$(INCLUDEDIR)/dovetail.h
	install -m 755 $(LUAMOD) $(DESTDIR)$(LUA_CMOD_DIR)/dovetail.so
	install -m 644 docs/dovetail.1 $(DESTDIR)$(MANDIR)/man1/dovetail.1
	install -m 644 docs/completion/dovetail.bash $(DESTDIR)$(BASH_COMPDIR)/dovetail
	install -m 644 docs/completion/_dovetail $(DESTDIR)$(ZSH_COMPDIR)/_dovetail
	install -m 644 $(CATALOG) $(CATALOG_AZURE) providers/catalogs/README.md $(DESTDIR)$(DATADIR)/catalogs/
	install -m 644 policies/*.lua $(DESTDIR)$(DATADIR)/policies/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call PC_REL,$(LIBDIR))|g' \
	  -e 's|@INCLUDEDIR@|$(call PC_REL,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g' \
	  engine/dovetail.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/dovetail.pc

# Debian packages (debian/), built by dpkg-buildpackage on a copy of the
# tracked files in build/deb/src, so the packaging's clean step never touches
# this tree's build/. The .debs land in build/deb/ (debug symbols in
# build/deb/dbgsym/); the stamp keeps them until a source file changes.
DEB_FILES = { git ls-files -co --exclude-standard $(1) 2>/dev/null || find $(or $(1),.) -path ./build -prune -o -path ./.git -prune -o -type f -print; }
DEB_INPUTS := Makefile spec/unit.c $(wildcard $(shell $(call DEB_FILES,debian engine lua providers policies docs)))

deb: build/deb/stamp

build/deb/stamp: $(DEB_INPUTS)
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null \
	  || { echo "make deb: needs dpkg-buildpackage and debhelper (make deps installs them)" >&2; exit 1; }
	rm -rf build/deb && mkdir -p build/deb/src
	$(call DEB_FILES,) | tar --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C build/deb/src
	cd build/deb/src && dpkg-buildpackage -us -uc -b -j$$(nproc 2>/dev/null || echo 2) > ../build.log 2>&1 \
	  || { tail -40 ../build.log; exit 1; }
	rm -rf build/deb/src
	mkdir -p build/deb/dbgsym
	for f in build/deb/*-dbgsym_*.deb; do if [ -f "$$f" ]; then mv "$$f" build/deb/dbgsym/; fi; done
	ls build/deb/*.deb
	@touch $@

clean:
	rm -rf build dovetail .deps-ok examples/embed
