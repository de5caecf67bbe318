# scripts/run.sh's part of the e810 preset (e810.toml holds tqfwd's options,
# EAL arguments and the PCI addresses run.sh checks).
PRESET_KIND=hardware      # huge pages required, no --no-huge fallback
EXPECT_DRIVER=vfio-pci    # run.sh checks the binding before it starts
HUGE_MIN_MB=1024          # tqfwd's pool + 8 queues x 2048 descriptors fit easily
