"""The cached one-thread BLAS limit."""


def test_one_blas_thread_limits_and_restores_every_blas():
    """The cached controller limits the BLAS libraries threadpoolctl finds (numpy's and
    scipy's) to one thread and restores them, on every entry."""
    import threadpoolctl

    from mom_pipeline.blas_threads import one_blas_thread

    def blas_threads():
        return sorted((info["filepath"], info["num_threads"]) for info in threadpoolctl.threadpool_info()
                      if info["user_api"] == "blas")

    before = blas_threads()
    assert before
    for _ in range(2):
        with one_blas_thread():
            assert all(threads == 1 for _, threads in blas_threads())
        assert blas_threads() == before
