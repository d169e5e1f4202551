/* Preloaded by the sentinel-run tests in place of libsentinel.so: it does nothing at all. */
int sentinel_dummy_preload_marker;
