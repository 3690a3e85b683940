CREATE TABLE `commerce_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider` text NOT NULL,
	`event_id` text NOT NULL,
	`type` text NOT NULL,
	`action` text NOT NULL,
	`status` text NOT NULL,
	`purchase_id` integer,
	`order_id` integer,
	`purchase_ref` text,
	`detail` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`purchase_id`) REFERENCES `commerce_purchases`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`order_id`) REFERENCES `orders`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `commerce_events_event` ON `commerce_events` (`provider`,`event_id`);--> statement-breakpoint
CREATE INDEX `commerce_events_order` ON `commerce_events` (`order_id`);--> statement-breakpoint
CREATE INDEX `commerce_events_purchase` ON `commerce_events` (`purchase_id`);--> statement-breakpoint
CREATE TABLE `commerce_mappings` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider` text NOT NULL,
	`external_id` text NOT NULL,
	`template_id` integer NOT NULL,
	`quantity_mode` text DEFAULT 'licenses' NOT NULL,
	`description` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`template_id`) REFERENCES `license_templates`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `commerce_mappings_external` ON `commerce_mappings` (`provider`,`external_id`);--> statement-breakpoint
CREATE TABLE `commerce_purchases` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider` text NOT NULL,
	`purchase_ref` text NOT NULL,
	`customer_ref` text,
	`order_id` integer,
	`state` text DEFAULT 'active' NOT NULL,
	`period_end` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`order_id`) REFERENCES `orders`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `commerce_purchases_ref` ON `commerce_purchases` (`provider`,`purchase_ref`);--> statement-breakpoint
CREATE INDEX `commerce_purchases_order` ON `commerce_purchases` (`order_id`);--> statement-breakpoint
CREATE TABLE `commerce_refs` (
	`provider` text NOT NULL,
	`ref` text NOT NULL,
	`purchase_id` integer NOT NULL,
	PRIMARY KEY(`provider`, `ref`),
	FOREIGN KEY (`purchase_id`) REFERENCES `commerce_purchases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `product_releases` ADD `rollout_schedule` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `halted` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `halted_at` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `halt_reason` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `rollback` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `critical` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `audience` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `halt_on_reports` text;--> statement-breakpoint
ALTER TABLE `products` ADD `minimum_version` text;