# tessera — plain Makefile (no CMake).
#
#   make            library (build/libtessera.a), tesserad, tessera, unit tests,
#                   the bundled model's draft text (build/models/aidreams260K.draft.txt)
#   make test       install missing Debian packages, build, check layers, run all tests
#   make demo       install missing packages, build, run the main job on the bundled model
#   make bench      benchmarks (JSON under build/bench/)
#   make fuzz       build the fuzz targets and run each for a short time
#   make asan       ASan+UBSan build of the tests, then run them
#   make format-check / check-layers / clean
#
# Sources are found by wildcard: every core/<module>/*.c goes into the library
# (files named *_avx2.c are compiled with -mavx2 -mfma, *_avx512.c with the
# AVX-512 F/DQ/VL/IFMA flags; both are chosen at run time),
# every tests/unit/*.c into build/tests/unit_tests. gpu/*.cu is compiled when
# nvcc is on PATH (NO_CUDA=1 forces the stub backend).

CC      ?= cc
NVCC    ?= nvcc
BUILD   ?= build
OPT     ?= -O2
SAN     ?=

CPPFLAGS += -I. -I$(BUILD)/gen -D_GNU_SOURCE
CFLAGS   += -std=c11 -Wall -Wextra -Werror $(OPT) -g -pthread -MMD -MP $(SAN)
LDFLAGS  += -pthread $(SAN)

PKGS      := libuv libprotobuf-c libzstd yaml-0.1 libcrypto libssl
# Lazily expanded: pkg-config runs only when a recipe needs the flags, after
# scripts/deps.sh has installed what was missing.
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -luv -lprotobuf-c -lzstd -lyaml -lssl -lcrypto)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt)
LIBS       = $(PKG_LIBS) -lm

# ------------------------------------------------------------------ CUDA
HAVE_NVCC := $(if $(NO_CUDA),,$(shell command -v $(NVCC) 2>/dev/null))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(HAVE_NVCC))
NVCCFLAGS ?= -O2 -std=c++17 -I. -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90 -Xcompiler -Wall,-Werror
ifneq ($(HAVE_NVCC),)
GPU_SRCS := $(wildcard gpu/*.cu)
GPU_CSRCS := $(filter-out gpu/gpu_stub.c,$(wildcard gpu/*.c))
GPU_OBJS := $(GPU_SRCS:%.cu=$(BUILD)/%.cu.o) $(GPU_CSRCS:%.c=$(BUILD)/%.o)
GPU_LIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -ldl -lrt -lstdc++
CPPFLAGS += -DTS_HAVE_CUDA=1
else
GPU_OBJS := $(BUILD)/gpu/gpu_stub.o
GPU_LIBS :=
endif

# A build folder remembers its configuration; changing it rebuilds everything.
CONFIG_ID := cuda=$(if $(HAVE_NVCC),1,0) opt=$(OPT) san=$(SAN) cc=$(CC)
CONFIG_STAMP := $(BUILD)/.config
$(shell mkdir -p $(BUILD) && (echo '$(CONFIG_ID)' | cmp -s - $(CONFIG_STAMP) || echo '$(CONFIG_ID)' > $(CONFIG_STAMP)))

# --------------------------------------------------------------- sources
CORE_SRCS   := $(sort $(wildcard core/*/*.c))
CORE_OBJS   := $(CORE_SRCS:%.c=$(BUILD)/%.o)
PROTO_FILES := $(sort $(wildcard proto/*.proto))
PROTO_GEN_C := $(PROTO_FILES:proto/%.proto=$(BUILD)/gen/proto/%.pb-c.c)
PROTO_GEN_H := $(PROTO_GEN_C:.c=.h)
PROTO_OBJS  := $(PROTO_GEN_C:%.c=%.o)
SERVER_SRCS := $(sort $(wildcard server/*.c))
SERVER_LIB_SRCS := $(filter-out server/main.c,$(SERVER_SRCS))
CLIENT_SRCS := $(sort $(wildcard client/*.c))
CLIENT_LIB_SRCS := $(filter-out client/main.c,$(CLIENT_SRCS))
TEST_SRCS   := $(sort $(wildcard tests/unit/*.c))
BENCH_SRCS  := $(sort $(wildcard tests/bench/*.c))
FUZZ_SRCS   := $(sort $(wildcard tests/fuzz/fuzz_*.c))

LIB        := $(BUILD)/libtessera.a
NETLIB     := $(BUILD)/libtessera_net.a
TESSERAD   := $(if $(wildcard server/main.c),$(BUILD)/tesserad)
TESSERA    := $(if $(wildcard client/main.c),$(BUILD)/tessera)
UNIT_TESTS := $(BUILD)/tests/unit_tests
BENCHES    := $(BENCH_SRCS:tests/bench/%.c=$(BUILD)/bench/%)
# The bundled model's public draft text for n-gram speculative decoding
# (models/README.md): built by tessera, so only where tessera is.
DRAFT_MODEL   := models/aidreams260K.bin
DRAFT_TOK     := models/tok512.bin
DRAFT_PROMPTS := models/aidreams260K.draft-prompts.txt
DRAFT_TEXT    := $(if $(TESSERA),$(BUILD)/models/aidreams260K.draft.txt)

NET_OBJS   := $(PROTO_OBJS) $(SERVER_LIB_SRCS:%.c=$(BUILD)/%.o) $(CLIENT_LIB_SRCS:%.c=$(BUILD)/%.o)

.PHONY: all test test-run demo demo-run bench fuzz asan format format-check check-layers \
        clean deps help
.DEFAULT_GOAL := all

all: $(LIB) $(NETLIB) $(TESSERAD) $(TESSERA) $(UNIT_TESTS) $(BENCHES) $(DRAFT_TEXT)

help:
	@sed -n '3,10p' Makefile

deps:
	@scripts/deps.sh

# ----------------------------------------------------------------- rules
$(BUILD)/%.o: %.c $(CONFIG_STAMP) | $(PROTO_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/%_avx2.o: %_avx2.c $(CONFIG_STAMP) | $(PROTO_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -mavx2 -mfma -c $< -o $@

$(BUILD)/%_avx512.o: %_avx512.c $(CONFIG_STAMP) | $(PROTO_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -mavx2 -mfma -mavx512f -mavx512dq -mavx512vl -mavx512ifma -c $< -o $@

$(BUILD)/%.cu.o: %.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -DTS_HAVE_CUDA=1 -MMD -MP -c $< -o $@

$(BUILD)/gen/proto/%.pb-c.c $(BUILD)/gen/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen/proto $<

# Generated sources are kept (not deleted as intermediates): later builds,
# the fuzz targets and editors include the headers.
.SECONDARY: $(PROTO_GEN_C) $(PROTO_GEN_H)

$(BUILD)/gen/proto/%.pb-c.o: $(BUILD)/gen/proto/%.pb-c.c
	$(CC) $(CPPFLAGS) -std=c11 -O2 -g -MMD -MP $(SAN) -I$(BUILD)/gen/proto -c $< -o $@

$(LIB): $(CORE_OBJS) $(GPU_OBJS) $(CONFIG_STAMP)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

$(NETLIB): $(NET_OBJS) $(CONFIG_STAMP)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

$(BUILD)/tesserad: $(BUILD)/server/main.o $(NETLIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(NETLIB) $(LIB) $(LIBS) $(GPU_LIBS)

$(BUILD)/tessera: $(BUILD)/client/main.o $(NETLIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(NETLIB) $(LIB) $(LIBS) $(GPU_LIBS)

# The test runner: every TS_TEST_SUITE(name) in tests/unit/*.c is registered.
$(BUILD)/tests/suites.gen.c: $(TEST_SRCS) scripts/gen_suites.sh
	@mkdir -p $(dir $@)
	scripts/gen_suites.sh $(TEST_SRCS) > $@.tmp && mv $@.tmp $@

$(BUILD)/tests/suites.gen.o: $(BUILD)/tests/suites.gen.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(UNIT_TESTS): $(TEST_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/tests/suites.gen.o $(NETLIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(NETLIB) $(LIB) $(CHECK_LIBS) $(LIBS) $(GPU_LIBS)

$(BUILD)/bench/%: tests/bench/%.c $(NETLIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(NETLIB) $(LIB) $(LIBS) $(GPU_LIBS)

# The greedy generation of each draft prompt over the model's whole context,
# one line each (tessera run --prompt-file); written aside and renamed, so a
# failed run leaves no partial file.
$(BUILD)/models/aidreams260K.draft.txt: $(DRAFT_PROMPTS) $(DRAFT_MODEL) $(DRAFT_TOK) $(TESSERA)
	@mkdir -p $(dir $@)
	$(TESSERA) run --model $(DRAFT_MODEL) --tokenizer $(DRAFT_TOK) --prompt-file $< >$@.tmp \
	    || { rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

# ----------------------------------------------------------------- tasks
test:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory check-layers
	@$(MAKE) --no-print-directory test-run

test-run: $(UNIT_TESTS) $(TESSERAD) $(TESSERA)
	@scripts/run_tests.sh $(BUILD)

demo:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh $(BUILD)

bench:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory all
	@scripts/bench.sh $(BUILD)

fuzz:
	@scripts/deps.sh
	@scripts/fuzz.sh

asan:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory BUILD=build-asan NO_CUDA=1 OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    build-asan/tests/unit_tests build-asan/tesserad build-asan/tessera
	@# the sanitizers run the suites ~3-5x slower: the cases' timeouts scale with them
	@ASAN_OPTIONS=detect_leaks=1 TS_TEST_QUICK=1 CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-4} \
	    scripts/run_tests.sh build-asan

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cu' 2>/dev/null)
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@scripts/format_check.sh

check-layers:
	@scripts/check_layers.sh

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
