#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# ckpt_mpi_job.sh: submit an MPICH program as a Slurm job that outlives its
# time limit under ckpt (docs/slurm.md, "MPI jobs").
#
#   ckpt_mpi_job.sh [SBATCH_OPTIONS...] RANKS PROGRAM [ARGS...]
#   ckpt_mpi_job.sh --time=12:00:00 --cpus-per-task=8 8 ./simulation
#
# The job is ckpt_job.sbatch (next to this script) with CKPT_SRUN=1: srun
# starts a job step that runs, under ckpt_launch,
#
#   mpirun -launcher fork -np RANKS PROGRAM ARGS...
#
# so MPICH's launcher (hydra's mpirun), its proxy and every rank are one
# computation on one node, their PMI connections inside it; a checkpoint
# and the restart in the next run take all of them. Ranks started by srun
# itself (srun --mpi=pmi2 PROGRAM) are not supported: their PMI server is
# slurmstepd, outside the computation, and gone at restart.
#
# Environment: as ckpt_job.sbatch (CKPT_DIR, CKPT_COORD, CKPT_CONTINUE);
# sbatch passes it on.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
options=
while [ $# -gt 0 ]; do
	case $1 in
	-*) options="$options $1"; shift ;;
	*) break ;;
	esac
done
if [ $# -lt 2 ]; then
	echo "usage: ckpt_mpi_job.sh [SBATCH_OPTIONS...] RANKS PROGRAM" \
	     "[ARGS...]" >&2
	exit 2
fi
ranks=$1
shift
case $ranks in
'' | *[!0-9]* | 0)
	echo "ckpt_mpi_job.sh: RANKS must be a positive number, not" \
	     "'$ranks'" >&2
	exit 2 ;;
esac
export CKPT_SRUN=1
# options are sbatch's own, one word each (--time=1:00:00)
# shellcheck disable=SC2086
exec sbatch --nodes=1 --ntasks=1 $options \
	"$here/ckpt_job.sbatch" mpirun -launcher fork -np "$ranks" "$@"
