// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * labkit's QEMU TCG plugin: guest instructions executed per address, between two markers.
 *
 * Built against QEMU's plugin API header (include/qemu/qemu-plugin.h, GPL-2.0-or-later,
 * from the source package of the QEMU that runs it), so it is kept with the GPL files.
 * Modelled on QEMU's tests/plugin/insn.c (Emilio G. Cota, GPL-2.0-or-later).
 *
 * The guest brackets the calls it wants counted with two 7-byte nops no compiler emits:
 *   start: 0f 1f 80 4c 4b 53 54    stop: 0f 1f 80 4c 4b 53 50
 * Between them every executed guest instruction adds one to its address's counter.
 * At each stop marker the plugin appends the window to the file named by the argument
 * out=PATH: a line "window <k> total <n>", then "<hex address> <count>" lines (count > 0),
 * and clears the counters.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static const unsigned char START[7] = { 0x0f, 0x1f, 0x80, 0x4c, 0x4b, 0x53, 0x54 };
static const unsigned char STOP[7] = { 0x0f, 0x1f, 0x80, 0x4c, 0x4b, 0x53, 0x50 };

struct slot {
	uint64_t vaddr;
	uint64_t count;
	int used;
};

static struct slot *table;
static size_t table_size = 1 << 16; /* addresses, open addressing; grows at half full */
static size_t table_used;
static int counting;
static uint64_t windows, total;
static FILE *out;

static size_t hash(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (size_t)v;
}

static struct slot *lookup(uint64_t vaddr);

static void grow(void)
{
	struct slot *old = table;
	size_t old_size = table_size;
	table_size *= 2;
	table = calloc(table_size, sizeof(*table));
	table_used = 0;
	for (size_t k = 0; k < old_size; k++)
		if (old[k].used) {
			struct slot *s = lookup(old[k].vaddr);
			s->count = old[k].count;
		}
	free(old);
}

/* The slot of vaddr (created if new); the caller grows the table first when half full. */
static struct slot *lookup(uint64_t vaddr)
{
	size_t k = hash(vaddr) & (table_size - 1);
	while (table[k].used && table[k].vaddr != vaddr)
		k = (k + 1) & (table_size - 1);
	if (!table[k].used) {
		table[k].used = 1;
		table[k].vaddr = vaddr;
		table_used++;
	}
	return &table[k];
}

static void on_insn(unsigned int cpu, void *udata)
{
	(void)cpu;
	if (counting) {
		if (2 * (table_used + 1) > table_size)
			grow();
		lookup((uint64_t)(uintptr_t)udata)->count++;
		total++;
	}
}

static void on_start(unsigned int cpu, void *udata)
{
	(void)cpu;
	(void)udata;
	counting = 1;
	windows++;
}

static void on_stop(unsigned int cpu, void *udata)
{
	(void)cpu;
	(void)udata;
	if (!counting)
		return;
	counting = 0;
	fprintf(out, "window %" PRIu64 " total %" PRIu64 "\n", windows, total);
	for (size_t k = 0; k < table_size; k++)
		if (table[k].used && table[k].count) {
			fprintf(out, "%" PRIx64 " %" PRIu64 "\n", table[k].vaddr, table[k].count);
			table[k].count = 0;
		}
	fflush(out);
	total = 0;
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	for (size_t k = 0; k < n; k++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
		const unsigned char *data = qemu_plugin_insn_data(insn);
		size_t size = qemu_plugin_insn_size(insn);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
		if (size == sizeof(START) && memcmp(data, START, size) == 0) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_start, QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
			continue;
		}
		if (size == sizeof(STOP) && memcmp(data, STOP, size) == 0) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_stop, QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
			continue;
		}
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, QEMU_PLUGIN_CB_NO_REGS,
						       (void *)(uintptr_t)vaddr);
	}
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	if (out != stderr)
		fclose(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	(void)info;
	out = stderr;
	for (int k = 0; k < argc; k++)
		if (strncmp(argv[k], "out=", 4) == 0)
			out = fopen(argv[k] + 4, "w");
	if (!out)
		return -1;
	table = calloc(table_size, sizeof(*table));
	if (!table)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
