/*
 * Counts the guest instructions a program executes under qemu-user (all threads), for
 * bench/instructions.sh. A TCG plugin written against QEMU's stable plugin API (version 1, as in
 * Debian 12's QEMU 7.2): the few declarations it needs are below, so no QEMU headers are needed.
 * Counting is exact and does not depend on how busy the machine is.
 */
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed;
static const char *output = "/dev/stderr";

static void on_exec(unsigned int vcpu, void *count) {
    (void)vcpu;
    __atomic_fetch_add(&executed, (uint64_t)(uintptr_t)count, __ATOMIC_RELAXED);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void on_exit(qemu_plugin_id_t id, void *unused) {
    (void)id;
    (void)unused;
    FILE *file = fopen(output, "w");
    if (file) {
        fprintf(file, "instructions %llu\n", (unsigned long long)__atomic_load_n(&executed, __ATOMIC_RELAXED));
        fclose(file);
    }
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
    (void)info;
    /* One optional argument: out=FILE, where the count is written at exit. */
    for (int index = 0; index < argc; index++) {
        if (argv[index][0] == 'o' && argv[index][1] == 'u' && argv[index][2] == 't' && argv[index][3] == '=') {
            output = argv[index] + 4;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
