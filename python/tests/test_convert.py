"""What a worker's conversion says when rocflow cannot read an input reaches the driver
whole: exceptions cross between Dask's processes pickled."""

import pickle
from pathlib import Path

from rocflow.convert import ConversionFailed
from rocflow.inputs import Input


def test_a_conversion_failure_crosses_between_processes_whole():
    failure = ConversionFailed(Input(Path("/job/rank-3.db"), "rocpd"), "not a rocpd database")
    crossed = pickle.loads(pickle.dumps(failure))
    assert isinstance(crossed, ConversionFailed)
    assert str(crossed) == "`/job/rank-3.db`: not a rocpd database"
