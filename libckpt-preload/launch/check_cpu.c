// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_check: the CPU state an image taken here records, which a restart
 * elsewhere needs (restart/arch/<arch>/cpu_features.c decides).
 */
#include <stdio.h>
#include "../../restart/image_check.h"
#include "check.h"

void check_cpu_features(struct check *c)
{
	uint64_t features = restart_arch_cpu_features();
	char names[200];

	restart_arch_describe_features(features, names, sizeof(names));
	c->name = "cpu_features";
	c->available = true;
	snprintf(c->value, sizeof(c->value), "%#llx",
		 (unsigned long long)features);
	snprintf(c->detail, sizeof(c->detail), "register state %#llx (%s)",
		 (unsigned long long)features, names);
	snprintf(c->without, sizeof(c->without), "images taken here record "
		 "this set: a restart needs a CPU with all of it, or "
		 "ckpt_restart --cpu-compat where the saved threads hold less");
}
