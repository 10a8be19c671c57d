import FuseBridge
print("drivefs: not yet")
