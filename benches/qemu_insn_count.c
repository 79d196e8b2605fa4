/* A qemu TCG plugin that counts the guest instructions a process executes and writes the total
 * to a file at exit: `qemu-aarch64 -plugin ./qemu_insn_count.so,out=FILE ...`. Used by
 * benches/aarch64_instructions.py to compare kernels without an aarch64 board.
 *
 * Each translated block adds its instruction count when it starts executing (an atomic add, as
 * qemu-user runs each guest thread on a host thread of its own); a block left early by a fault or
 * a signal counts whole, which a steady loop of inferences does not do.
 *
 * Only the few functions used are declared, from qemu's plugin API (docs/devel/tcg-plugins,
 * API version 1: qemu 7.2 onwards, as Debian 12 ships), so no qemu headers are needed. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };

typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

static uint64_t executed;
static char out_path[4096];

static void on_block(unsigned int vcpu_index, void *n_insns) {
    (void)vcpu_index;
    __atomic_fetch_add(&executed, (uint64_t)(uintptr_t)n_insns, __ATOMIC_RELAXED);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    uintptr_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void *)n);
}

static void write_count(qemu_plugin_id_t id, void *userdata) {
    (void)id;
    (void)userdata;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        fprintf(stderr, "qemu_insn_count: cannot write %s\n", out_path);
        return;
    }
    fprintf(f, "%llu\n", (unsigned long long)__atomic_load_n(&executed, __ATOMIC_RELAXED));
    fclose(f);
}

/* qemu's plugin entry point; argv holds the `name=value` arguments after the file name. */
EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof out_path) {
            strcpy(out_path, argv[i] + 4);
        }
    }
    if (!out_path[0]) {
        fprintf(stderr, "qemu_insn_count: needs out=FILE\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, write_count, NULL);
    return 0;
}
