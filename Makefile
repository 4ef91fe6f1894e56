# The two commands of the README: `make demo` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), configure with
# CMake and build. WERROR=1 turns warnings into errors (CI); CUDA=OFF|ON|AUTO.
BUILD   ?= build
ASAN_BUILD ?= build-asan
CUDA    ?= AUTO
WERROR  ?= 0
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# make install PREFIX=... (DESTDIR=... is honoured too); make uninstall removes
# what the last install from $(BUILD) recorded in $(BUILD)/install_manifest.txt.
PREFIX  ?= /usr/local

ifeq ($(WERROR),1)
  WFLAG := -DIC_WERROR=ON
else
  WFLAG := -DIC_WERROR=OFF
endif

FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 25

.PHONY: all deps build test demo asan test-asan bench clean install uninstall fuzz fuzz-smoke

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DIC_CUDA=$(CUDA) $(WFLAG) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The sanitizer build: CPU only (ASan cannot watch device memory), debug info.
asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIC_CUDA=OFF -DIC_SANITIZE=ON $(WFLAG) $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)

test-asan: asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# libFuzzer targets (tests/fuzz), clang with ASan + UBSan; `make fuzz-smoke`
# runs each for FUZZ_SECONDS from its committed seeds (what CI does).
fuzz:
	@bash scripts/install-deps.sh fuzz
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIC_CUDA=OFF -DIC_FUZZ=ON -DBUILD_TESTING=OFF $(WFLAG) $(CMAKE_ARGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz

fuzz-smoke: fuzz
	bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

uninstall:
	cmake -DMANIFEST=$(BUILD)/install_manifest.txt -P cmake/uninstall.cmake

demo: build
	bash scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) demo-out
