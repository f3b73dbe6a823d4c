// SPDX-License-Identifier: GPL-2.0
/* The program hooks_bench spawns: dynamic, it does nothing but start. */
int main(void)
{
	return 0;
}
