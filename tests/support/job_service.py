"""A Beam job service whose runner starts ``--direct_num_workers`` SDK workers per job.

Beam 2.77's local job service (``--job_endpoint=embed``, or ``local_job_service_main``) runs
each job with ``FnApiRunner.run_via_runner_api``, which never reads ``--direct_num_workers``: a
job gets one SDK worker, so with ``--environment_type=EXTERNAL`` it uses one worker pool
whatever the flags say. This job service is Beam's own with that one thing changed, so a job
can spread its bundles over several workers, and through :class:`tests.support.cluster.PoolFront`
over several pools, as a Flink job server does over task managers (``--sdk_worker_parallelism``).

    python -m tests.support.job_service --port 8099
"""
from __future__ import annotations

import argparse
import threading

from apache_beam.options.pipeline_options import DirectOptions
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability import local_job_service
from apache_beam.runners.portability.fn_api_runner import fn_runner


class ParallelBeamJob(local_job_service.BeamJob):
    """A job run by an FnApiRunner with the job's ``--direct_num_workers`` workers."""

    def _invoke_runner(self):
        self.set_state(beam_job_api_pb2.JobState.RUNNING)
        options = self.pipeline_options()
        runner = fn_runner.FnApiRunner(provision_info=self._provision_info)
        runner._num_workers = max(1, int(options.view_as(DirectOptions).direct_num_workers or 1))
        return runner.run_via_runner_api(self._pipeline_proto, options)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    servicer = local_job_service.LocalJobServicer(beam_job_type=ParallelBeamJob)
    port = servicer.start_grpc_server(args.port)
    print(f"job service listening on {port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
